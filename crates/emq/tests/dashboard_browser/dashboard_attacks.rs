//! Attacks on `emq dashboard` from a real browser (issue 37): a page of
//! another origin — another port of the same host, or another host — can
//! neither read the dashboard nor run an action, with and without a token
//! (signed in), and a DNS-rebound name is not served. Debian's chromium
//! over WebDriver, as in `dashboard_browser.rs`; the attacker's page is
//! served by this test on its own loopback port, and chromium resolves the
//! test's made-up names to 127.0.0.1 (`--host-resolver-rules`).

use crate::browser::{Browser, LOOK_EVERY, ONE_BROWSER, Site};
use crate::common::{self, PATIENCE};
use echomq::{NewJob, Wire};
use echomq_testkit::Wait;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Made-up names chromium resolves to 127.0.0.1: the attacker's own
/// host, and a name an attacker rebinds to the victim's loopback.
const RESOLVE: &str =
    "--host-resolver-rules=MAP attacker.test 127.0.0.1, MAP rebound.test 127.0.0.1";

/// The attacker's page: tries to read the dashboard's queues page, to
/// pause queue `q` with a fetch and with a form posted into a frame (with
/// `csrf`, a token the attacker's own server read from the login form),
/// and to read the dashboard in a frame; writes what happened into `#out`
/// as JSON when every attempt has an answer.
fn attack_page(dashboard: &str, csrf: &str) -> String {
    format!(
        r#"<!doctype html><html><body>
<pre id="out">running</pre>
<iframe id="frame" src="{dashboard}/"></iframe>
<iframe name="sink" id="sink"></iframe>
<form id="form" method="post" action="{dashboard}/queues/q/act/pause" target="sink">
  <input name="_csrf" value="{csrf}"><input name="back" value="/">
</form>
<script>
const out = {{}};
const dashboard = "{dashboard}";
async function attack() {{
  try {{
    const answer = await fetch(dashboard + "/", {{ credentials: "include" }});
    const text = await answer.text();
    out.read = text.includes('data-queue="q"') ? "read the queues" : "read " + answer.status;
  }} catch (e) {{ out.read = "blocked"; }}
  try {{
    await fetch(dashboard + "/queues/q/act/pause", {{
      method: "POST", mode: "no-cors", credentials: "include",
      headers: {{ "Content-Type": "application/x-www-form-urlencoded" }},
      body: "_csrf={csrf}",
    }});
    out.fetch_post = "answered";
  }} catch (e) {{ out.fetch_post = "failed"; }}
  await new Promise((done) => {{
    document.getElementById("sink").addEventListener("load", done, {{ once: true }});
    document.getElementById("form").submit();
  }});
  out.form_post = "answered";
  try {{
    const inside = document.getElementById("frame").contentDocument;
    out.frame = inside && inside.body ? "readable: " + inside.body.innerText.slice(0, 80) : "blocked";
  }} catch (e) {{ out.frame = "blocked"; }}
  out.done = true;
  document.getElementById("out").textContent = JSON.stringify(out);
}}
attack();
</script></body></html>"#
    )
}

/// Serves `page` to every request on a free loopback port, until the
/// test ends; the port.
async fn serve_attacker(page: String) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let page = page.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match stream.read(&mut byte).await {
                        Ok(1) => head.push(byte[0]),
                        _ => return,
                    }
                }
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{page}",
                    page.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    port
}

/// Opens the attacker's page at `url` and waits for its report.
async fn attacked(browser: &Browser, url: &str) -> Value {
    browser.open(url).await;
    Wait::new("the attacker's page to report", PATIENCE)
        .every(LOOK_EVERY)
        .until_async(|| async {
            let text = browser.text("#out").await?;
            serde_json::from_str::<Value>(&text)
                .map(drop)
                .map_err(|_| format!("it reads {text:?}"))
        })
        .await;
    serde_json::from_str(&browser.text("#out").await.unwrap()).unwrap()
}

/// Signs `browser` in to `site` with `token` through the login form.
async fn sign_in(browser: &Browser, site: &Site, token: &str) {
    browser.open(&site.url("/login")).await;
    let field = browser.element("#token").await;
    field.send_keys(token).await.expect("type the token");
    browser
        .element("form.login button")
        .await
        .click()
        .await
        .expect("sign in");
    browser.element("#queues").await;
}

/// The CSRF token of the login form as anyone who can reach the
/// dashboard reads it (the attacker's server, say).
fn token_of_the_login_form(site: &Site) -> String {
    let addr = site.root.strip_prefix("http://").unwrap();
    let (_, page) = common::http_get(addr, "/login");
    let at = page.find(r#"name="_csrf" value=""#).expect("a CSRF field") + 20;
    page[at..at + page[at..].find('"').unwrap()].to_string()
}

/// The attack from `attacker` (a host, at `port`) on `site`.
async fn attack_from(browser: &Browser, site: &Site, attacker: &str) -> Value {
    let csrf = token_of_the_login_form(site);
    let port = serve_attacker(attack_page(&site.root, &csrf)).await;
    let report = attacked(browser, &format!("http://{attacker}:{port}/")).await;
    assert_eq!(report["done"], json!(true), "{report}");
    report
}

/// Every attempt of `report` failed, and `q` is not paused.
async fn assert_repelled(site: &Site, report: &Value) {
    assert_eq!(report["read"], json!("blocked"), "{report}");
    assert_eq!(report["frame"], json!("blocked"), "{report}");
    assert_eq!(report["fetch_post"], json!("answered"), "{report}");
    assert_eq!(report["form_post"], json!("answered"), "{report}");
    let counts = site.queue("q").admin().counts().await.unwrap();
    assert!(!counts.paused, "the attack paused q: {report}");
}

async fn with_queue(site: &Site) {
    site.queue("q")
        .enqueue(NewJob::new(json!({"n": 1})).id("a").unwrap())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_page_of_another_port_or_host_can_neither_read_nor_act_without_a_token() {
    let _one = ONE_BROWSER.lock().await;
    let browser = Browser::start_with(false, &[RESOLVE]).await;
    let site = Site::start(Wire::Script, &[]).await;
    with_queue(&site).await;
    // The victim has the dashboard open (its session cookie is set).
    browser.open(&site.url("/")).await;
    browser.element("#queues").await;
    for attacker in ["127.0.0.1", "attacker.test"] {
        let report = attack_from(&browser, &site, attacker).await;
        assert_repelled(&site, &report).await;
    }
}

#[tokio::test]
async fn a_page_of_another_port_or_host_can_neither_read_nor_act_when_signed_in() {
    let _one = ONE_BROWSER.lock().await;
    let browser = Browser::start_with(false, &[RESOLVE]).await;
    let site = Site::start(Wire::Native, &["--token", "s3cret"]).await;
    with_queue(&site).await;
    sign_in(&browser, &site, "s3cret").await;
    for attacker in ["127.0.0.1", "attacker.test"] {
        let report = attack_from(&browser, &site, attacker).await;
        assert_repelled(&site, &report).await;
    }
    // Still signed in, and the dashboard's own form still acts.
    browser.open(&site.url("/queues/q")).await;
    browser
        .element(r#"form[data-action="pause"] button"#)
        .await
        .click()
        .await
        .expect("pause");
    browser.element(".notice").await;
    assert!(site.queue("q").admin().counts().await.unwrap().paused);
}

#[tokio::test]
async fn a_rebound_name_is_not_served() {
    let _one = ONE_BROWSER.lock().await;
    let browser = Browser::start_with(false, &[RESOLVE]).await;
    let site = Site::start(Wire::Script, &[]).await;
    with_queue(&site).await;
    let port = site.root.rsplit(':').next().unwrap().to_string();
    browser.open(&format!("http://rebound.test:{port}/")).await;
    let refused = browser.text("h1").await.unwrap();
    assert_eq!(refused, "Wrong host");
    let body = browser.text("body").await.unwrap();
    assert!(!body.contains("Queues"), "{body}");
    browser
        .open(&format!("http://rebound.test:{port}/queues/q/jobs/a"))
        .await;
    assert_eq!(browser.text("h1").await.unwrap(), "Wrong host");
}
