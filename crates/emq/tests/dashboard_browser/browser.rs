//! The browser tests' harness: Debian's `chromium` driven over WebDriver
//! by its own `chromedriver` (fantoccini, plain HTTP), and `emq dashboard`
//! serving a real server. Chromedriver and chromium are found on `PATH`
//! (or through `EMQ_CHROMEDRIVER` and `EMQ_CHROMIUM`); when either is
//! missing every test fails saying so (`scripts/setup` installs both):
//! never a silent skip.

#![allow(dead_code)]

use crate::common::{PATIENCE, Spawned, spawn_on};
use echomq::{Connector, Queue, Wire};
use echomq_testkit::{ServerBinary, TestServer, Wait, module_path, wait_until};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// One browser at a time: two cores cannot run several chromiums and
/// a server each within the tests' waits.
pub(crate) static ONE_BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How often a wait on the page looks again (each look is a WebDriver
/// round trip).
pub(crate) const LOOK_EVERY: Duration = Duration::from_millis(50);

/// Headless chromium on a closed network: nothing fetched, no GPU, no
/// sandbox (containers), a fixed window for the screenshots.
pub(crate) const CHROMIUM_ARGS: [&str; 11] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
    "--hide-scrollbars",
];

/// `env`'s path, else the first of `names` on `PATH`; panics saying what is
/// missing and how to install it.
pub(crate) fn program(env: &str, names: &[&str]) -> PathBuf {
    if let Some(path) = std::env::var_os(env) {
        return path.into();
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "the dashboard's browser tests need {} on PATH (or ${env}): \
                 Debian's chromium and chromium-driver packages, which scripts/setup installs",
                names.join(" or ")
            )
        })
}

/// A free port on loopback (bound, read, released).
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// One bodiless HTTP/1.1 request to `127.0.0.1:port`; the answer's head
/// and body (read to its `Content-Length`: chromedriver keeps the
/// connection open).
pub(crate) fn http(port: u16, method: &str, path: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(PATIENCE))?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    )?;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let read = stream.read(&mut chunk)?;
        answer.extend_from_slice(&chunk[..read]);
        let text = String::from_utf8_lossy(&answer);
        let complete = text.split_once("\r\n\r\n").is_some_and(|(head, body)| {
            let length = head.lines().find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())?
            });
            length.is_some_and(|length| body.len() >= length)
        });
        if read == 0 || complete {
            return Ok(text.into_owned());
        }
    }
}

/// A chromedriver child process, killed when dropped.
pub(crate) struct Chromedriver {
    child: Child,
    port: u16,
}

impl Chromedriver {
    /// Starts chromedriver on a free port; returns once its `/status` says
    /// it is ready.
    pub(crate) fn start() -> Self {
        let path = program("EMQ_CHROMEDRIVER", &["chromedriver"]);
        let port = free_port();
        let child = Command::new(&path)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|err| panic!("start {}: {err}", path.display()));
        let mut driver = Self { child, port };
        wait_until("chromedriver to answer /status", PATIENCE, || {
            if let Some(status) = driver.child.try_wait().expect("try_wait") {
                panic!("chromedriver exited at start: {status}");
            }
            match http(port, "GET", "/status") {
                Ok(answer) if answer.contains(r#""ready":true"#) => Ok(()),
                Ok(answer) => Err(format!("not ready: {answer}")),
                Err(err) => Err(err.to_string()),
            }
        });
        driver
    }
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A chromium session through its own chromedriver, in a fresh profile.
/// Dropping it ends the session (chromium quits), then chromedriver.
pub(crate) struct Browser {
    pub client: Client,
    session: String,
    driver: Chromedriver,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Headless chromium, dark (`prefers-color-scheme: dark`) when `dark`.
    pub(crate) async fn start(dark: bool) -> Self {
        Self::start_with(dark, &[]).await
    }

    /// Headless chromium with `extra` arguments (`--host-resolver-rules=…`).
    pub(crate) async fn start_with(dark: bool, extra: &[&str]) -> Self {
        let chromium = program("EMQ_CHROMIUM", &["chromium", "chromium-browser"]);
        let driver = Chromedriver::start();
        let profile = tempfile::tempdir().expect("a profile directory");
        let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|a| a.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        if dark {
            args.push("--force-dark-mode".into());
        }
        args.extend(extra.iter().map(|a| a.to_string()));
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("browserName".into(), json!("chrome"));
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({ "binary": chromium, "args": args }),
        );
        let mut builder =
            ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
        builder.capabilities(capabilities);
        let client = builder
            .connect(&format!("http://127.0.0.1:{}", driver.port))
            .await
            .unwrap_or_else(|err| panic!("a chromium session ({}): {err}", chromium.display()));
        let session = client
            .session_id()
            .await
            .expect("session id")
            .expect("a session");
        Self {
            client,
            session,
            driver,
            _profile: profile,
        }
    }

    /// Widens the window so the queues table shows every column.
    pub(crate) async fn wide(&self) {
        self.client
            .set_window_size(1440, 900)
            .await
            .expect("window size");
    }

    /// Opens `url` (waits for the page to load).
    pub(crate) async fn open(&self, url: &str) {
        self.client
            .goto(url)
            .await
            .unwrap_or_else(|err| panic!("open {url}: {err}"));
    }

    /// Waits (at most [`PATIENCE`]) for an element matching `css`.
    pub(crate) async fn element(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(PATIENCE)
            .every(LOOK_EVERY)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|err| panic!("no {css} within {PATIENCE:?}: {err}"))
    }

    /// How many elements match `css` now.
    pub(crate) async fn count(&self, css: &str) -> usize {
        self.client
            .find_all(Locator::Css(css))
            .await
            .unwrap_or_else(|err| panic!("find {css}: {err}"))
            .len()
    }

    /// The text of the first element matching `css`, now.
    pub(crate) async fn text(&self, css: &str) -> Result<String, String> {
        let element = self
            .client
            .find(Locator::Css(css))
            .await
            .map_err(|err| format!("no {css}: {err}"))?;
        // A live swap may replace the element between find and read.
        element
            .text()
            .await
            .map_err(|err| format!("{css} went: {err}"))
    }

    /// Waits (at most [`PATIENCE`]) until the first element matching `css`
    /// reads `want` (trimmed), re-reading the page as it changes.
    pub(crate) async fn wait_text(&self, css: &str, want: &str) {
        Wait::new(&format!("{css} to read {want:?}"), PATIENCE)
            .every(LOOK_EVERY)
            .until_async(|| async move {
                match self.text(css).await {
                    Ok(text) if text.trim() == want => Ok(()),
                    Ok(text) => Err(format!("it reads {text:?}")),
                    Err(err) => Err(err),
                }
            })
            .await
    }

    /// Runs `script` in the page; its value.
    pub(crate) async fn eval(&self, script: &str) -> Value {
        self.client
            .execute(script, Vec::new())
            .await
            .unwrap_or_else(|err| panic!("run {script}: {err}"))
    }

    /// Waits (at most [`PATIENCE`]) until the live part `css` (an element
    /// with `sse-connect`) has its event stream open.
    pub(crate) async fn wait_live(&self, css: &str) {
        let script = format!(
            "const e = document.querySelector({css:?}); \
             const data = e && e['htmx-internal-data']; \
             return !!(data && data.sseEventSource && data.sseEventSource.readyState === 1);"
        );
        Wait::new(&format!("{css}'s event stream to open"), PATIENCE)
            .every(LOOK_EVERY)
            .until_async(|| async { self.eval(&script).await == json!(true) })
            .await
    }

    /// Saves a screenshot of the window as `name`.png in the screenshots
    /// directory; its path (printed).
    pub(crate) async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.client.screenshot().await.expect("screenshot");
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).expect("screenshots directory");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("write screenshot");
        // Straight to stderr: the test harness would capture a println.
        let _ = writeln!(std::io::stderr(), "screenshot: {}", path.display());
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Synchronously, whatever the test did: chromedriver quits chromium
        // when its session ends, and would leave it running if killed first.
        let _ = http(
            self.driver.port,
            "DELETE",
            &format!("/session/{}", self.session),
        );
    }
}

/// `target/dashboard-screenshots/`: next to the `emq` binary's profile
/// directory (`target/debug/emq`).
pub(crate) fn screenshot_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_emq"))
        .parent()
        .and_then(Path::parent)
        .expect("the target directory")
        .join("dashboard-screenshots")
}

/// A real server on one wire, a connector to it, and `emq dashboard`
/// serving it on a free port.
pub(crate) struct Site {
    _dashboard: Spawned,
    /// The dashboard's root, without the trailing `/`.
    pub root: String,
    pub connector: Connector,
    pub server: TestServer,
}

impl Site {
    /// A server on `wire` (the module loaded for wire 6) and
    /// `emq --wire <wire> dashboard --listen 127.0.0.1:0 <flags>`.
    pub(crate) async fn start(wire: Wire, flags: &[&str]) -> Self {
        let (server, wire_arg) = match wire {
            Wire::Script => (TestServer::start(), "script"),
            Wire::Native => (
                TestServer::with_config(
                    ServerBinary::locate().unwrap(),
                    false,
                    vec![module_path()],
                ),
                "native",
            ),
        };
        let connector = Connector::builder(server.url())
            .wire(wire)
            .connect()
            .await
            .expect("connect");
        let mut args = vec!["--wire", wire_arg, "dashboard", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(flags);
        let mut dashboard = spawn_on(&server, &args);
        let first = dashboard.next_line();
        let root = first
            .strip_prefix("serving ")
            .unwrap_or_else(|| panic!("emq dashboard's first line: {first:?}"))
            .trim_end_matches('/')
            .to_string();
        Self {
            _dashboard: dashboard,
            root,
            connector,
            server,
        }
    }

    /// The dashboard's URL of `path` (which starts with `/`).
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.root)
    }

    pub(crate) fn queue(&self, name: &str) -> Queue<Value> {
        self.connector.queue(name).expect("queue name")
    }
}
