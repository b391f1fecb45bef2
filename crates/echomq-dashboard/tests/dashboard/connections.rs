//! `echomq_dashboard::serve` on a real socket: a client that never
//! finishes its headers, or sits idle, is cut off; a body that never
//! arrives answers 408; past the cap, a new connection waits for an open
//! one to close (issue 37, finding 7).

use crate::common::Site;
use echomq::Wire;
use echomq_dashboard::{ConnectionLimits, Dashboard, serve};
use echomq_testkit::socket::read_to_close;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// The longest any read here waits for the server.
const PATIENCE: Duration = Duration::from_secs(20);

/// The dashboard of `site` served on a free loopback port within `limits`.
async fn served(site: &Site, limits: ConnectionLimits) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = Dashboard::new(site.connector.clone())
        .listening_on(addr)
        .router();
    tokio::spawn(serve(listener, router, limits, std::future::pending()));
    addr
}

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream
}

/// Reads one whole answer to a `GET` (its head, then `Content-Length`
/// bytes).
fn read_answer(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let read = stream.read(&mut chunk).expect("an answer");
        assert!(read > 0, "closed before the answer was whole");
        answer.extend_from_slice(&chunk[..read]);
        let text = String::from_utf8_lossy(&answer);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            if body.len() >= length {
                return text.into_owned();
            }
        }
    }
}

fn limits(header_wait: Duration, connections: usize) -> ConnectionLimits {
    ConnectionLimits {
        header_wait,
        connections,
        shutdown_wait: Duration::from_secs(1),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_finishes_its_headers_is_cut_off() {
    let site = Site::start(Wire::Script).await;
    let addr = served(&site, limits(Duration::from_secs(1), 8)).await;
    tokio::task::spawn_blocking(move || {
        let mut slow = connect(addr);
        slow.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ")
            .unwrap();
        let answer = read_to_close(&mut slow);
        assert!(!answer.contains("200 OK"), "{answer}");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_closed() {
    let site = Site::start(Wire::Script).await;
    let addr = served(&site, limits(Duration::from_secs(1), 8)).await;
    tokio::task::spawn_blocking(move || {
        let mut idle = connect(addr);
        write!(
            idle,
            "GET /assets/style.css HTTP/1.1\r\nHost: {addr}\r\n\r\n"
        )
        .unwrap();
        assert!(read_answer(&mut idle).starts_with("HTTP/1.1 200"));
        // Kept alive, then nothing more: the server closes it.
        assert_eq!(read_to_close(&mut idle), "");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_never_arrives_answers_408() {
    let site = Site::start(Wire::Script).await;
    let addr = served(&site, limits(Duration::from_secs(30), 8)).await;
    tokio::task::spawn_blocking(move || {
        let mut slow = connect(addr);
        write!(
            slow,
            "POST /queues/q/act/pause HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://{addr}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n_csrf="
        )
        .unwrap();
        let answer = read_answer(&mut slow);
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("did not arrive within"), "{answer}");
    })
    .await
    .unwrap();
    assert!(!site.queue("q").admin().counts().await.unwrap().paused);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_cap_a_connection_waits_for_an_open_one_to_close() {
    let site = Site::start(Wire::Script).await;
    let addr = served(&site, limits(Duration::from_secs(60), 2)).await;
    tokio::task::spawn_blocking(move || {
        let request = format!("GET /assets/style.css HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        // Two connections served and kept open: the cap.
        let mut held: Vec<TcpStream> = (0..2)
            .map(|_| {
                let mut stream = connect(addr);
                stream.write_all(request.as_bytes()).unwrap();
                assert!(read_answer(&mut stream).starts_with("HTTP/1.1 200"));
                stream
            })
            .collect();
        let mut third = connect(addr);
        third.write_all(request.as_bytes()).unwrap();
        // Not served while both are open (a served answer takes
        // milliseconds; waiting longer only makes this pass more surely).
        third
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut byte = [0u8; 1];
        let early = third.read(&mut byte);
        assert!(
            matches!(&early, Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)),
            "served past the cap: {early:?}"
        );
        // One closes: the third is served.
        drop(held.pop());
        third.set_read_timeout(Some(PATIENCE)).unwrap();
        assert!(read_answer(&mut third).starts_with("HTTP/1.1 200"));
    })
    .await
    .unwrap();
}
