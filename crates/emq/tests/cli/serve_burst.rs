//! `emq serve` under a burst of 1,000 concurrent long-polled claims
//! (`POST /api/v1/queues/q/claim` with `wait_ms`) over real sockets: the
//! server holds at most `--max-connections` of them open (the rest wait
//! in the listen queue), so its descriptors, its memory and its Valkey
//! connections stay bounded while every poll is answered; one job
//! enqueued during the burst goes to exactly one poll.

use crate::common::{PATIENCE, queue, spawn_on};
use crate::serve::served_at;
use echomq_testkit::TestServer;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Long-polls sent at once.
const POLLS: usize = 1000;
/// How long each waits for work: four rounds of 256 take about 4 × this.
const WAIT_MS: u64 = 1500;
/// `--max-connections` (the default).
const CONNECTIONS: usize = 256;
/// Descriptors past the connections the burst may add (a reconnect, a
/// timer, a log): a handful.
const SPARE_FDS: usize = 16;
/// Memory the burst may add: 64 KiB for each connection held open
/// (hyper's read and write buffers, the task, the claim's future and its
/// waiter; about 24 KiB each measured), 16 MiB for 256. Measured: about
/// 6 MiB with the cap, about 17 MiB with 1,000 connections served at once.
const SPARE_RSS_KIB: u64 = (CONNECTIONS as u64) * 64;
/// Valkey connections the burst may add: none is needed (claims share
/// the multiplexed connection and one listener per queue), a few spare.
const SPARE_VALKEY_CLIENTS: u64 = 4;

/// What the server holds at one moment.
#[derive(Debug, Default, Clone, Copy)]
struct Held {
    fds: usize,
    rss_kib: u64,
    valkey_clients: u64,
}

impl Held {
    fn most(self, other: Held) -> Held {
        Held {
            fds: self.fds.max(other.fds),
            rss_kib: self.rss_kib.max(other.rss_kib),
            valkey_clients: self.valkey_clients.max(other.valkey_clients),
        }
    }
}

/// The open descriptors and resident memory of process `pid`, and the
/// clients connected to the Valkey server.
async fn held(pid: u32, valkey: &mut redis::aio::MultiplexedConnection) -> Held {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the server's /proc entry")
        .count();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss_kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .expect("VmRSS in /proc/<pid>/status");
    let info: String = redis::cmd("INFO")
        .arg("clients")
        .query_async(valkey)
        .await
        .unwrap();
    let valkey_clients = info
        .lines()
        .find_map(|line| line.strip_prefix("connected_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("connected_clients in INFO clients");
    Held {
        fds,
        rss_kib,
        valkey_clients,
    }
}

/// One long-polled claim on `addr`: the status line and the JSON body.
async fn long_poll(addr: String, wait_ms: u64) -> (String, Value) {
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let body = json!({ "wait_ms": wait_ms }).to_string();
    let request = format!(
        "POST /api/v1/queues/q/claim HTTP/1.1\r\nHost: {addr}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(4 * PATIENCE, stream.read_to_end(&mut answer))
        .await
        .expect("an answer within the bound")
        .expect("read the answer");
    let answer = String::from_utf8(answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    let status = head.lines().next().unwrap().to_string();
    let body = serde_json::from_str(body).unwrap_or_else(|err| panic!("{err}: {answer}"));
    (status, body)
}

#[test]
fn serve_answers_a_burst_of_1000_long_polls_within_bounded_fds_memory_and_valkey_clients() {
    let server = TestServer::start();
    let mut serve = spawn_on(
        &server,
        &["serve", "--listen", "127.0.0.1:0", "--no-dashboard"],
    );
    let addr = served_at(&serve.next_line());
    let pid = serve.pid();
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    let runtime = runtime.worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let mut valkey = server.connection().await;
        let q = queue(&server, "q").await;
        // One poll first, so the queue's listener is open before the
        // baseline is read.
        let (status, _) = long_poll(addr.clone(), 1).await;
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        let before = held(pid, &mut valkey).await;
        let polls: Vec<_> = (0..POLLS)
            .map(|_| tokio::spawn(long_poll(addr.clone(), WAIT_MS)))
            .collect();
        let mut most = before;
        let mut enqueued = None;
        let mut every = tokio::time::interval(Duration::from_millis(20));
        let deadline = tokio::time::Instant::now() + 4 * PATIENCE;
        while !polls.iter().all(|poll| poll.is_finished()) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the burst was not answered within {:?}",
                4 * PATIENCE
            );
            let now = held(pid, &mut valkey).await;
            most = most.most(now);
            // Once the server holds nearly all it may, one job arrives.
            if enqueued.is_none() && now.fds >= before.fds + CONNECTIONS - SPARE_FDS {
                enqueued = Some(q.enqueue(json!({"burst": true})).await.unwrap().id);
            }
            every.tick().await;
        }
        let enqueued = enqueued.expect("the server never held the connection cap's polls");
        let mut claimed = Vec::new();
        for poll in polls {
            let (status, body) = poll.await.unwrap();
            assert!(status.starts_with("HTTP/1.1 200"), "{status}: {body}");
            for job in body["jobs"].as_array().expect("jobs") {
                claimed.push(job["id"].as_str().unwrap().to_string());
            }
        }
        eprintln!("burst of {POLLS}: before {before:?}, at most {most:?}");
        assert_eq!(claimed, vec![enqueued.as_str().to_string()]);
        assert!(
            most.fds <= before.fds + CONNECTIONS + SPARE_FDS,
            "{most:?} past {before:?}"
        );
        assert!(
            most.rss_kib <= before.rss_kib + SPARE_RSS_KIB,
            "{most:?} past {before:?}"
        );
        assert!(
            most.valkey_clients <= before.valkey_clients + SPARE_VALKEY_CLIENTS,
            "{most:?} past {before:?}"
        );
    });
}
