//! `emq serve`'s bounds on slow and large requests, over real sockets:
//! headers that stall past `--header-timeout` close the connection, a
//! body that stalls past `--body-timeout` answers 408, and a body far over
//! `--max-body` answers 413 to a client that writes it all before reading.

use crate::common::{PATIENCE, emq, spawn_on};
use crate::serve::served_at;
use echomq_testkit::TestServer;
use echomq_testkit::socket::read_to_close;
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

/// The most a 1 s timeout may take to close a connection or answer
/// (well under the 10 s default, so a flag not applied fails).
const SOON: Duration = Duration::from_secs(5);

/// A connection to `addr` whose reads wait at most `bound`.
fn connect(addr: &str, bound: Duration) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(bound)).unwrap();
    stream
}

#[test]
fn serve_closes_a_connection_whose_headers_stall_past_header_timeout() {
    let server = TestServer::start();
    let mut serve = spawn_on(
        &server,
        &["serve", "--listen", "127.0.0.1:0", "--header-timeout", "1s"],
    );
    let addr = served_at(&serve.next_line());
    let mut slow = connect(&addr, SOON);
    write!(
        slow,
        "GET /api/v1/queues HTTP/1.1\r\nHost: {addr}\r\nX-Half: "
    )
    .unwrap();
    let answer = read_to_close(&mut slow);
    assert!(!answer.contains("200 OK"), "{answer}");
}

#[test]
fn serve_answers_408_to_a_body_that_stalls_past_body_timeout() {
    let server = TestServer::start();
    let mut serve = spawn_on(
        &server,
        &["serve", "--listen", "127.0.0.1:0", "--body-timeout", "1s"],
    );
    let addr = served_at(&serve.next_line());
    let mut slow = connect(&addr, SOON);
    write!(
        slow,
        "POST /api/v1/queues/q/jobs HTTP/1.1\r\nHost: {addr}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"payload\": "
    )
    .unwrap();
    let answer = read_to_close(&mut slow);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("TIMEOUT"), "{answer}");
    assert!(answer.contains("within 1 s"), "{answer}");
}

#[test]
fn serve_refuses_a_header_timeout_of_zero() {
    let run = emq(&["serve", "--header-timeout", "0s"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--header-timeout"), "{}", run.stderr);
}

#[test]
fn serve_refuses_a_body_timeout_of_zero() {
    let run = emq(&["serve", "--body-timeout", "0s"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--body-timeout"), "{}", run.stderr);
}

#[test]
fn serve_answers_413_to_a_16_mib_body_written_whole_before_reading() {
    let server = TestServer::start();
    let mut serve = spawn_on(&server, &["serve", "--listen", "127.0.0.1:0"]);
    let addr = served_at(&serve.next_line());
    let body = vec![b' '; 16 << 20];
    // A reset eats the answer only sometimes: try a few times.
    for attempt in 0..3 {
        let mut client = connect(&addr, PATIENCE);
        write!(
            client,
            "POST /api/v1/queues/q/jobs HTTP/1.1\r\nHost: {addr}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            body.len()
        )
        .unwrap();
        client
            .write_all(&body)
            .unwrap_or_else(|err| panic!("attempt {attempt}: the body was cut off: {err}"));
        let answer = read_to_close(&mut client);
        assert!(
            answer.starts_with("HTTP/1.1 413"),
            "attempt {attempt}: {answer}"
        );
        assert!(answer.contains("TOOLARGE"), "attempt {attempt}: {answer}");
    }
}

#[test]
fn serve_answers_413_unread_to_a_body_announced_over_max_body_with_expect_100_continue() {
    let server = TestServer::start();
    let mut serve = spawn_on(&server, &["serve", "--listen", "127.0.0.1:0"]);
    let addr = served_at(&serve.next_line());
    let mut client = connect(&addr, SOON);
    // What curl sends before a large body: it waits for 100 Continue.
    write!(
        client,
        "POST /api/v1/queues/q/jobs HTTP/1.1\r\nHost: {addr}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\
         Expect: 100-continue\r\nConnection: close\r\n\r\n",
        16 << 20
    )
    .unwrap();
    let answer = read_to_close(&mut client);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("TOOLARGE"), "{answer}");
}
