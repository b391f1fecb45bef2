//! Live updates against real servers: every live page of the dashboard
//! shares one reader of events per server (per queue on a cluster) and
//! one read per part and wake, so its Valkey connections and reads do not
//! grow with its viewers; viewers over the cap get 503 and a slot frees
//! when one leaves.

use crate::common::{self, Browser, Site, on_both_wires};
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use echomq::{Connector, NewJob};
use echomq_testkit::{TestCluster, wait_for};
use http_body_util::BodyExt;
use serde_json::json;
use std::time::Duration;
use tower::ServiceExt;

/// How long a live update may take to arrive: well under the dashboard's
/// 10 s refresh, so only news can make it.
const NEWS: Duration = Duration::from_secs(5);
/// How long connections may take to open or close.
const SETTLE: Duration = Duration::from_secs(10);

/// A live page's event stream, read as it comes.
struct Live {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    /// The whole body of an answer other than 200.
    body: String,
    stream: Option<Body>,
    /// Received and not parsed yet.
    unread: String,
}

/// `GET path` of `browser`'s router (with its Host and session cookie),
/// its body left to stream.
async fn live(browser: &Browser, path: &str) -> Live {
    let mut request = Request::builder()
        .uri(path)
        .header(header::HOST, "127.0.0.1");
    if let Some(cookie) = browser.cookie() {
        request = request.header(header::COOKIE, cookie);
    }
    for (name, value) in &browser.headers {
        request = request.header(name, value);
    }
    let response = browser
        .router
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    if status != StatusCode::OK {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        return Live {
            status,
            headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
            stream: None,
            unread: String::new(),
        };
    }
    Live {
        status,
        headers,
        body: String::new(),
        stream: Some(response.into_body()),
        unread: String::new(),
    }
}

impl Live {
    /// The data of the next event named `name`, within [`NEWS`]; panics
    /// otherwise. Other events and keep-alive comments are skipped.
    async fn next(&mut self, name: &str) -> String {
        let limit = tokio::time::Instant::now() + NEWS;
        loop {
            while let Some(end) = self.unread.find("\n\n") {
                let message: String = self.unread.drain(..end + 2).collect();
                let mut event = "message";
                let mut data = Vec::new();
                for line in message.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        event = v.trim_start();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push(v.strip_prefix(' ').unwrap_or(v));
                    }
                }
                if event == name {
                    return data.join("\n");
                }
            }
            let stream = self.stream.as_mut().expect("a live stream (200)");
            let frame = tokio::time::timeout_at(limit, stream.frame())
                .await
                .unwrap_or_else(|_| panic!("no {name:?} event within {NEWS:?}"))
                .expect("the stream goes on")
                .unwrap();
            if let Ok(bytes) = frame.into_data() {
                self.unread.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
    }
}

impl Live {
    /// Waits (at most [`NEWS`]) for the stream to end; panics if it goes on.
    async fn ends(&mut self) {
        let stream = self.stream.as_mut().expect("a live stream (200)");
        let limit = tokio::time::Instant::now() + NEWS;
        while let Some(frame) = tokio::time::timeout_at(limit, stream.frame())
            .await
            .unwrap_or_else(|_| panic!("the stream went on past {NEWS:?}"))
        {
            frame.unwrap();
        }
    }
}

/// `GET path`, expecting a live stream.
async fn open(browser: &Browser, path: &str) -> Live {
    let page = live(browser, path).await;
    assert_eq!(page.status, StatusCode::OK, "{path}: {}", page.body);
    page
}

/// `names` queues, each with one pending job.
async fn seed(site: &Site, names: &[&str]) {
    for name in names {
        site.queue(name).enqueue(json!({"seed": 1})).await.unwrap();
    }
}

/// Enqueues one job to `queue` of `site`.
async fn enqueue(site: &Site, queue: &str) {
    site.queue(queue).enqueue(json!({"n": 2})).await.unwrap();
}

/// The server's `INFO clients` field `field`.
async fn clients_field(conn: &mut redis::aio::MultiplexedConnection, field: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("clients")
        .query_async(conn)
        .await
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {info}"))
}

/// The server's connected clients (the one asking included).
async fn connected(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    clients_field(conn, "connected_clients").await
}

/// Waits until the server has `want` connected clients.
async fn wait_connected(conn: &redis::aio::MultiplexedConnection, want: u64, what: &str) {
    wait_for(what, SETTLE, || {
        let mut conn = conn.clone();
        async move {
            let now = connected(&mut conn).await;
            if now == want {
                Ok(())
            } else {
                Err(format!("{now} connected, waiting for {want}"))
            }
        }
    })
    .await;
}

/// Replaces `key` with a string.
async fn make_string(conn: &mut redis::aio::MultiplexedConnection, key: &str) {
    let _: () = redis::pipe()
        .cmd("DEL")
        .arg(key)
        .cmd("SET")
        .arg(key)
        .arg("not a stream")
        .query_async(conn)
        .await
        .unwrap();
}

/// The connected clients of every node.
async fn connected_to_all(conns: &mut [redis::aio::MultiplexedConnection]) -> u64 {
    let mut sum = 0;
    for conn in conns {
        sum += connected(conn).await;
    }
    sum
}

#[tokio::test]
async fn live_pages_over_many_queues_hold_one_reader_connection() {
    on_both_wires(|site| async move {
        let names = ["q0", "q1", "q2", "q3", "q4"];
        seed(&site, &names).await;
        let mut info = site.server.connection().await;
        let before = connected(&mut info).await;
        let browser = site.dashboard();
        let mut overview = Vec::new();
        for _ in 0..10 {
            overview.push(open(&browser, "/live/queues").await);
        }
        let mut pages = Vec::new();
        for name in names {
            for _ in 0..2 {
                pages.push((name, open(&browser, &format!("/live/queues/{name}")).await));
            }
        }
        // Every page is live: an enqueue to each queue reaches each page.
        for name in names {
            enqueue(&site, name).await;
        }
        for page in &mut overview {
            page.next("queues").await;
        }
        for (_, page) in &mut pages {
            page.next("counts").await;
        }
        let now = connected(&mut info).await;
        assert!(
            now <= before + 1,
            "20 live pages over 5 queues: {now} connections, {before} before; \
             one reader for all of them, not one per page and queue"
        );
    })
    .await;
}

#[tokio::test]
async fn the_reader_stops_when_the_last_viewer_leaves() {
    let site = Site::start(echomq::Wire::Script).await;
    seed(&site, &["q0", "q1", "q2"]).await;
    let mut info = site.server.connection().await;
    let before = connected(&mut info).await;
    let browser = site.dashboard();
    let overview = open(&browser, "/live/queues").await;
    let mut queue = open(&browser, "/live/queues/q0").await;
    wait_connected(&info, before + 1, "one reader for both pages").await;
    drop(overview);
    // The other viewer is still served, by the same reader.
    enqueue(&site, "q0").await;
    queue.next("counts").await;
    assert_eq!(connected(&mut info).await, before + 1);
    drop(queue);
    wait_connected(&info, before, "the reader's connection to close").await;
    assert_eq!(clients_field(&mut info, "blocked_clients").await, 0);
}

#[tokio::test]
async fn a_viewer_over_the_cap_gets_503_and_a_slot_frees_when_one_leaves() {
    let site = Site::start(echomq::Wire::Script).await;
    seed(&site, &["q0"]).await;
    let browser = site.browse(|d| d.live_viewers(2));
    let first = open(&browser, "/live/queues").await;
    let _second = open(&browser, "/live/queues/q0").await;
    for path in ["/live/queues", "/live/queues/q0"] {
        let over = live(&browser, path).await;
        assert_eq!(over.status, StatusCode::SERVICE_UNAVAILABLE, "{path}");
        assert!(
            over.body.contains("Live updates are full"),
            "{path}: {}",
            over.body
        );
        assert!(
            over.body.contains("at most 2 live viewers"),
            "{}",
            over.body
        );
        assert!(over.body.contains("This page still works"), "{}", over.body);
        assert!(over.headers.contains_key(header::RETRY_AFTER), "{path}");
    }
    // The pages themselves are served as ever.
    browser.get("/").await.expect(StatusCode::OK);
    browser.get("/queues/q0").await.expect(StatusCode::OK);
    drop(first);
    let mut third = open(&browser, "/live/queues").await;
    enqueue(&site, "q0").await;
    third.next("queues").await;
}

#[tokio::test]
async fn a_cap_of_zero_turns_live_updates_off() {
    let site = Site::start(echomq::Wire::Script).await;
    seed(&site, &["q0"]).await;
    let browser = site.browse(|d| d.live_viewers(0));
    let off = live(&browser, "/live/queues").await;
    assert_eq!(off.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(off.body.contains("Live updates are off"), "{}", off.body);
    browser.get("/").await.expect(StatusCode::OK);
}

#[tokio::test]
async fn a_live_stream_of_a_bad_queue_name_is_refused_400_and_takes_no_slot() {
    let site = Site::start(echomq::Wire::Script).await;
    let browser = site.browse(|d| d.live_viewers(1));
    let refused = live(&browser, "/live/queues/a%20b").await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    assert!(refused.body.contains("queue name"), "{}", refused.body);
    open(&browser, "/live/queues").await;
}

#[tokio::test]
async fn an_enqueue_reaches_every_live_page_while_maxclients_is_low() {
    on_both_wires(|site| async move {
        seed(&site, &["q0", "q1", "q2"]).await;
        let mut info = site.server.connection().await;
        let before = connected(&mut info).await;
        // Room for the dashboard's reader and a producer connecting anew
        // (as `emq enqueue` does), not for a connection per page.
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxclients")
            .arg(before + 4)
            .query_async(&mut info)
            .await
            .unwrap();
        let browser = site.dashboard();
        let mut overview = Vec::new();
        let mut watched = Vec::new();
        let mut others = Vec::new();
        for _ in 0..10 {
            overview.push(open(&browser, "/live/queues").await);
            watched.push(open(&browser, "/live/queues/q1").await);
            others.push(open(&browser, "/live/queues/q2").await);
        }
        let producer = Connector::builder(site.server.url())
            .wire(site.wire)
            .connect()
            .await
            .expect("a new client connects while 30 live pages are open");
        producer
            .queue::<serde_json::Value>("q1")
            .unwrap()
            .enqueue(NewJob::new(json!({"n": 3})))
            .await
            .unwrap();
        for page in &mut overview {
            let rows = page.next("queues").await;
            assert!(rows.contains(r#"data-queue="q1""#), "{rows}");
        }
        for page in &mut watched {
            let tabs = page.next("counts").await;
            assert!(tabs.contains("pending"), "{tabs}");
        }
    })
    .await;
}

#[tokio::test]
async fn each_live_page_draws_the_shared_reading_with_its_own_csrf_token() {
    let site = Site::start(echomq::Wire::Script).await;
    seed(&site, &["q0"]).await;
    let alice = site.dashboard();
    let bob = alice.stranger();
    let mut tokens = Vec::new();
    let mut pages = Vec::new();
    for browser in [&alice, &bob] {
        tokens.push(browser.get("/").await.expect(StatusCode::OK).csrf());
        pages.push(open(browser, "/live/queues").await);
    }
    assert_ne!(tokens[0], tokens[1], "two sessions, two tokens");
    enqueue(&site, "q0").await;
    for (page, token) in pages.iter_mut().zip(&tokens) {
        let rows = page.next("queues").await;
        let field = format!(r#"name="_csrf" value="{token}""#);
        assert!(rows.contains(&field), "{field} in {rows}");
        for other in tokens.iter().filter(|t| *t != token) {
            assert!(
                !rows.contains(other.as_str()),
                "another session's token in {rows}"
            );
        }
    }
}

#[tokio::test]
async fn viewers_of_one_part_share_one_read_per_wake() {
    let site = Site::start(echomq::Wire::Script).await;
    seed(&site, &["q0", "q1", "q2"]).await;
    let browser = site.dashboard();
    let mut pages = Vec::new();
    for _ in 0..20 {
        pages.push(open(&browser, "/live/queues").await);
    }
    let mut info = site.server.connection().await;
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut info)
        .await
        .unwrap();
    enqueue(&site, "q0").await;
    for page in &mut pages {
        page.next("queues").await;
    }
    // Each reading of the queues table reads the registry once.
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut info)
        .await
        .unwrap();
    let readings: u64 = stats
        .lines()
        .find_map(|line| line.strip_prefix("cmdstat_smembers:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        (1..=2).contains(&readings),
        "20 viewers of the queues table, one wake: {readings} readings\n{stats}"
    );
}

#[tokio::test]
async fn a_queue_whose_events_key_is_not_a_stream_leaves_the_others_live() {
    let site = Site::start(echomq::Wire::Script).await;
    seed(&site, &["good", "bad", "later"]).await;
    let mut raw = site.server.connection().await;
    make_string(&mut raw, &site.queue("bad").keys().events()).await;
    let browser = site.dashboard();
    let _bad = open(&browser, "/live/queues/bad").await;
    let _later = open(&browser, "/live/queues/later").await;
    let mut good = open(&browser, "/live/queues/good").await;
    enqueue(&site, "good").await;
    good.next("counts").await;
    // A stream that turns bad while it is read.
    make_string(&mut raw, &site.queue("later").keys().events()).await;
    enqueue(&site, "good").await;
    good.next("counts").await;
}

#[tokio::test]
async fn on_a_cluster_each_watched_queue_has_one_reader() {
    let cluster = TestCluster::start(3);
    let connector = Connector::cluster(cluster.urls()).connect().await.unwrap();
    let names = ["c0", "c1", "c2"];
    for name in names {
        connector
            .queue::<serde_json::Value>(name)
            .unwrap()
            .enqueue(json!({"seed": 1}))
            .await
            .unwrap();
    }
    let mut infos = Vec::new();
    for node in cluster.nodes() {
        infos.push(node.connection().await);
    }
    let before = connected_to_all(&mut infos).await;
    let browser = Browser {
        router: echomq_dashboard::router(connector.clone()),
        headers: Vec::new(),
        jar: Default::default(),
        origin: Some(common::SERVED.to_string()),
        client: None,
    };
    let mut pages = Vec::new();
    for _ in 0..4 {
        pages.push(("queues", open(&browser, "/live/queues").await));
        for name in names {
            pages.push((
                "counts",
                open(&browser, &format!("/live/queues/{name}")).await,
            ));
        }
    }
    for name in names {
        connector
            .queue::<serde_json::Value>(name)
            .unwrap()
            .enqueue(json!({"n": 2}))
            .await
            .unwrap();
    }
    for (event, page) in &mut pages {
        page.next(event).await;
    }
    let now = connected_to_all(&mut infos).await;
    let nodes = cluster.nodes().len() as u64;
    assert!(
        now <= before + names.len() as u64 * nodes,
        "16 live pages over 3 queues on {nodes} nodes: {now} connections, {before} before; \
         one reader per queue (a cluster connection reaches every node)"
    );
}

#[tokio::test]
async fn a_signed_in_live_page_ends_when_its_session_signs_out() {
    let site = Site::start(echomq::Wire::Script).await;
    seed(&site, &["q0"]).await;
    let browser = site.browse(|d| d.token("s3cret"));
    let form = browser.get("/login").await.expect(StatusCode::OK);
    browser
        .post_raw("/login", &[("token", "s3cret"), ("_csrf", &form.csrf())])
        .await
        .expect(StatusCode::SEE_OTHER);
    let mut page = open(&browser, "/live/queues").await;
    enqueue(&site, "q0").await;
    page.next("queues").await;
    browser
        .post("/logout", &[])
        .await
        .expect(StatusCode::SEE_OTHER);
    enqueue(&site, "q0").await;
    page.ends().await;
}

#[tokio::test]
async fn the_live_queues_feed_shows_only_the_token_s_queues() {
    let site = Site::start(echomq::Wire::Script).await;
    seed(&site, &["emails", "billing"]).await;
    let grant = echomq_dashboard::grant::Grant {
        name: "web".into(),
        role: echomq_dashboard::grant::AccessRole::Reader,
        queues: vec!["emails".into()],
    };
    let file = echomq_dashboard::tokens::entry_toml(
        &grant,
        &echomq_dashboard::tokens::sha256_hex("web-token"),
    );
    let tokens = echomq_dashboard::tokens::Tokens::parse(&file).unwrap();
    let browser = site
        .browse(|d| d.tokens(tokens))
        .with_header("authorization", "Bearer web-token");
    let mut feed = open(&browser, "/live/queues").await;
    enqueue(&site, "billing").await;
    let rows = feed.next("queues").await;
    assert!(rows.contains(r#"data-queue="emails""#), "{rows}");
    assert!(!rows.contains("billing"), "{rows}");
    let refused = live(&browser, "/live/queues/billing").await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
}
