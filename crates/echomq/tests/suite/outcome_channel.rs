//! The outcome channel (docs/protocol.md, "Outcome waits"), its publishing
//! side: every command that decides or deletes a job publishes
//! `<id> <outcome>` on `<base>:outcome` for a job whose `waited` is 1 on a
//! queue whose meta mark `waited` is 1, and nothing else. OUTCOME, which
//! sets the marks, is not here: each case sets them raw (`HSET`). Each case
//! runs on both wires; a listener holds a plain `SSUBSCRIBE` and reads what
//! a command published up to a sentinel it publishes itself, so "nothing"
//! is checked without a sleep.

use crate::common::{self, Harness, raw_call, server_now};
use echomq::{
    CancelOutcome, DrainScope, FailAction, IfActive, JobId, NewJob, Queue, QueueSettings,
};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const LEASE: Duration = Duration::from_secs(30);
/// How long a listener waits for the next message before the case fails.
const PATIENCE: Duration = Duration::from_secs(10);
/// What a listener publishes to mark the end of what it reads: no
/// outcome message is one word.
const SENTINEL: &str = "sentinel";

/// One reply of the subscription: RESP2 bulk strings, integers, arrays.
#[derive(Debug)]
enum Resp {
    Text(String),
    Int,
    Array(Vec<Resp>),
}

/// A plain connection subscribed (`SSUBSCRIBE`) to a queue's outcome
/// channel.
struct Listener {
    reader: BufReader<TcpStream>,
    channel: String,
    publisher: redis::aio::MultiplexedConnection,
}

impl Listener {
    async fn open<T>(h: &Harness, q: &Queue<T>) -> Self {
        let url = &h.urls()[0];
        let address = url.trim_start_matches("redis://");
        let address = address.rsplit('@').next().unwrap().trim_end_matches('/');
        let mut stream = TcpStream::connect(address).await.unwrap();
        let channel = q.keys().outcome_channel();
        let command = format!(
            "*2\r\n$10\r\nSSUBSCRIBE\r\n${}\r\n{channel}\r\n",
            channel.len()
        );
        stream.write_all(command.as_bytes()).await.unwrap();
        let mut listener = Self {
            reader: BufReader::new(stream),
            channel,
            publisher: h.raw(q).await,
        };
        match listener.next().await {
            Resp::Array(items) if matches!(&items[0], Resp::Text(kind) if kind == "ssubscribe") => {
            }
            other => panic!("SSUBSCRIBE answered {other:?}"),
        }
        listener
    }

    async fn line(&mut self) -> String {
        let mut line = String::new();
        let read = tokio::time::timeout(PATIENCE, self.reader.read_line(&mut line));
        read.await
            .expect("a message on the outcome channel in time")
            .unwrap();
        line.trim_end_matches("\r\n").to_string()
    }

    async fn next(&mut self) -> Resp {
        let line = self.line().await;
        let (kind, rest) = line.split_at(1);
        match kind {
            ":" => Resp::Int,
            "$" => {
                let len: usize = rest.parse().unwrap();
                let mut bytes = vec![0; len + 2];
                self.reader.read_exact(&mut bytes).await.unwrap();
                bytes.truncate(len);
                Resp::Text(String::from_utf8(bytes).unwrap())
            }
            "*" => {
                let len: usize = rest.parse().unwrap();
                let mut items = Vec::with_capacity(len);
                for _ in 0..len {
                    items.push(Box::pin(self.next()).await);
                }
                Resp::Array(items)
            }
            _ => panic!("unexpected reply line {line:?}"),
        }
    }

    /// Every message published on the channel since the last call, in
    /// order: publishes the sentinel and reads up to it.
    async fn published(&mut self) -> Vec<String> {
        let _: u64 = redis::cmd("SPUBLISH")
            .arg(&self.channel)
            .arg(SENTINEL)
            .query_async(&mut self.publisher)
            .await
            .unwrap();
        let mut seen = Vec::new();
        loop {
            let Resp::Array(items) = self.next().await else {
                continue;
            };
            if let [Resp::Text(kind), Resp::Text(channel), Resp::Text(message)] = items.as_slice()
                && kind == "smessage"
            {
                assert_eq!(channel, &self.channel);
                if message == SENTINEL {
                    return seen;
                }
                seen.push(message.clone());
            }
        }
    }
}

/// Sets the queue's meta mark `waited`, as OUTCOME does on its first wait.
async fn mark_queue<T>(h: &Harness, q: &Queue<T>) {
    let _: u64 = redis::cmd("HSET")
        .arg(q.keys().meta())
        .arg("waited")
        .arg(1)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
}

/// Sets a job's `waited`, as OUTCOME does for an unfinished job.
async fn mark_job<T>(h: &Harness, q: &Queue<T>, id: &str) {
    let _: u64 = redis::cmd("HSET")
        .arg(q.keys().job(&JobId::new(id).unwrap()))
        .arg("waited")
        .arg(1)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
}

/// A marked queue whose jobs `ids` are enqueued (pending) and marked.
async fn waited_queue(h: &Harness, name: &str, ids: &[&str]) -> Queue<Value> {
    let q = h.queue::<Value>(name);
    for id in ids {
        enqueue(&q, id).await;
        mark_job(h, &q, id).await;
    }
    mark_queue(h, &q).await;
    q
}

async fn enqueue(q: &Queue<Value>, id: &str) {
    let job = NewJob::new(json!(id)).id(id).unwrap();
    assert!(q.enqueue(job).await.unwrap().created);
}

async fn schedule(q: &Queue<Value>, id: &str) {
    let job = NewJob::new(json!(id))
        .id(id)
        .unwrap()
        .after(Duration::from_secs(3600));
    assert!(q.enqueue(job).await.unwrap().created);
}

async fn claim(q: &Queue<Value>, id: &str) -> echomq::Claimed<Value> {
    let claimed = q.claim_one("w", LEASE).await.unwrap().expect("a job");
    assert_eq!(claimed.id.as_str(), id);
    claimed
}

/// Claims the next job, `id`, under a 1 ms lease and waits until the
/// server's clock has passed its deadline.
/// A marked queue `name` with a waited job in each state a deletion
/// meets: `pending`, `later` (scheduled), `active`, and `done` (completed,
/// its message read), and a listener on its channel.
async fn one_waited_job_in_each_state(h: &Harness, name: &str) -> (Queue<Value>, Listener) {
    let q = waited_queue(h, name, &["active", "done", "pending"]).await;
    schedule(&q, "later").await;
    mark_job(h, &q, "later").await;
    let mut listener = Listener::open(h, &q).await;
    claim(&q, "active").await;
    let done = claim(&q, "done").await;
    q.complete(&done.id, done.token, &json!(1)).await.unwrap();
    assert_eq!(listener.published().await, ["done completed 1"]);
    (q, listener)
}

async fn claim_and_let_stall(h: &Harness, q: &Queue<Value>, id: &str) {
    let claimed = q
        .claim_one("w", Duration::from_millis(1))
        .await
        .unwrap()
        .expect("a job");
    assert_eq!(claimed.id.as_str(), id);
    let at = q.jobs().get(&claimed.id).await.unwrap().unwrap().claimed_at;
    let past = at.unwrap() + 1;
    wait_for(
        "the server's clock to pass the lease",
        Duration::from_secs(10),
        || async { server_now(h, q).await > past },
    )
    .await;
}

fn id(text: &str) -> JobId {
    JobId::new(text).unwrap()
}

#[echomq_testkit::case]
async fn complete_publishes_the_result_of_a_waited_job_only(h: &Harness) {
    let q = waited_queue(h, "outcome_complete", &["a"]).await;
    enqueue(&q, "b").await;
    let mut listener = Listener::open(h, &q).await;
    let a = claim(&q, "a").await;
    let b = claim(&q, "b").await;
    q.complete(&a.id, a.token, &json!({"ok": 1, "text": "with spaces"}))
        .await
        .unwrap();
    q.complete(&b.id, b.token, &json!(2)).await.unwrap();
    assert_eq!(
        listener.published().await,
        [r#"a completed {"ok":1,"text":"with spaces"}"#],
        "b has no waiter"
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
async fn a_job_enqueued_waited_publishes_its_outcome_with_no_outcome_sent(h: &Harness) {
    let q = h.queue::<Value>("outcome_enqueued_waited");
    let mut listener = Listener::open(h, &q).await;
    raw_call(h, &q, "enqueue", &["a", "1", "WAITED"])
        .await
        .unwrap();
    let bulk = ["b", "2", "0", "3", "c", "3", "0", "3", "WAITED"];
    raw_call(h, &q, "enqueue_bulk", &bulk).await.unwrap();
    enqueue(&q, "plain").await;
    for id in ["a", "b", "c", "plain"] {
        let job = claim(&q, id).await;
        q.complete(&job.id, job.token, &json!(id)).await.unwrap();
    }
    assert_eq!(
        listener.published().await,
        [
            r#"a completed "a""#,
            r#"b completed "b""#,
            r#"c completed "c""#
        ],
        "plain was enqueued without the word"
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
async fn complete_without_a_result_publishes_an_empty_one(h: &Harness) {
    let q = waited_queue(h, "outcome_no_result", &["a"]).await;
    let mut listener = Listener::open(h, &q).await;
    let a = claim(&q, "a").await;
    raw_call(h, &q, "complete", &["a", &a.token.to_string()])
        .await
        .unwrap();
    assert_eq!(listener.published().await, ["a completed "]);
}

#[echomq_testkit::case]
async fn complete_bulk_publishes_each_waited_job(h: &Harness) {
    let q = waited_queue(h, "outcome_complete_bulk", &["a", "b"]).await;
    enqueue(&q, "c").await;
    let mut listener = Listener::open(h, &q).await;
    let tokens: Vec<String> = [
        claim(&q, "a").await,
        claim(&q, "b").await,
        claim(&q, "c").await,
    ]
    .iter()
    .map(|claimed| claimed.token.to_string())
    .collect();
    let args = [
        "a", &tokens[0], "r a", "b", &tokens[1], "", "c", &tokens[2], "r c",
    ];
    raw_call(h, &q, "complete_bulk", &args).await.unwrap();
    assert_eq!(
        listener.published().await,
        ["a completed r a", "b completed "]
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
async fn keep_completed_0_deletes_the_job_and_its_message_carries_the_result(h: &Harness) {
    let q = waited_queue(h, "outcome_keep_none", &["a"]).await;
    q.configure(&QueueSettings {
        keep_completed: 0,
        ..QueueSettings::default()
    })
    .await
    .unwrap();
    let mut listener = Listener::open(h, &q).await;
    let a = claim(&q, "a").await;
    q.complete(&a.id, a.token, &json!("done")).await.unwrap();
    assert!(
        q.jobs().get(&a.id).await.unwrap().is_none(),
        "deleted at once"
    );
    assert_eq!(listener.published().await, [r#"a completed "done""#]);
}

#[echomq_testkit::case]
async fn retention_trimming_a_finished_waited_job_publishes_nothing(h: &Harness) {
    let q = waited_queue(h, "outcome_trimmed", &["a"]).await;
    enqueue(&q, "b").await;
    q.configure(&QueueSettings {
        keep_completed: 1,
        ..QueueSettings::default()
    })
    .await
    .unwrap();
    let mut listener = Listener::open(h, &q).await;
    let a = claim(&q, "a").await;
    q.complete(&a.id, a.token, &json!(1)).await.unwrap();
    assert_eq!(listener.published().await, ["a completed 1"]);
    let b = claim(&q, "b").await;
    q.complete(&b.id, b.token, &json!(2)).await.unwrap();
    assert!(
        q.jobs().get(&a.id).await.unwrap().is_none(),
        "a was trimmed"
    );
    assert_eq!(listener.published().await, Vec::<String>::new());
}

#[echomq_testkit::case]
async fn fail_to_dead_publishes_the_failures_and_the_error(h: &Harness) {
    let q = waited_queue(h, "outcome_dead", &["a"]).await;
    let mut listener = Listener::open(h, &q).await;
    let a = claim(&q, "a").await;
    let retry = FailAction::Retry(Duration::ZERO);
    q.fail(&a.id, a.token, "first", retry).await.unwrap();
    assert_eq!(
        listener.published().await,
        Vec::<String>::new(),
        "a retry decides nothing"
    );
    let a = claim(&q, "a").await;
    q.fail(&a.id, a.token, "it broke down", FailAction::Dead)
        .await
        .unwrap();
    assert_eq!(listener.published().await, ["a dead 2 it broke down"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
async fn fail_to_cancelled_publishes_cancelled(h: &Harness) {
    let q = waited_queue(h, "outcome_fail_cancelled", &["a", "b"]).await;
    let mut listener = Listener::open(h, &q).await;
    let a = claim(&q, "a").await;
    q.fail(&a.id, a.token, "stop", FailAction::Cancelled)
        .await
        .unwrap();
    let b = claim(&q, "b").await;
    let asked = q.jobs().cancel(&b.id).await.unwrap();
    assert_eq!(asked, CancelOutcome::Requested);
    assert_eq!(
        listener.published().await,
        ["a cancelled"],
        "a cancellation asked of an active job decides nothing yet"
    );
    let retry = FailAction::Retry(Duration::ZERO);
    q.fail(&b.id, b.token, "asked to stop", retry)
        .await
        .unwrap();
    assert_eq!(listener.published().await, ["b cancelled"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
async fn stalled_check_to_dead_publishes_stalled(h: &Harness) {
    let q = waited_queue(h, "outcome_stalled_dead", &["a"]).await;
    let mut listener = Listener::open(h, &q).await;
    let a = claim(&q, "a").await;
    let retry = FailAction::Retry(Duration::ZERO);
    q.fail(&a.id, a.token, "once", retry).await.unwrap();
    claim_and_let_stall(h, &q, "a").await;
    let swept = q.sweep_stalled(0, 100).await.unwrap();
    assert_eq!((swept.recovered, swept.dead), (0, 1));
    assert_eq!(listener.published().await, ["a dead 1 stalled"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
async fn stalled_check_publishes_a_cancelled_job_and_not_a_recovered_one(h: &Harness) {
    let q = waited_queue(h, "outcome_stalled_cancel", &["a", "b"]).await;
    let mut listener = Listener::open(h, &q).await;
    claim_and_let_stall(h, &q, "a").await;
    claim_and_let_stall(h, &q, "b").await;
    q.jobs().cancel(&id("a")).await.unwrap();
    let swept = q.sweep_stalled(5, 100).await.unwrap();
    assert_eq!((swept.recovered, swept.dead), (1, 0));
    assert_eq!(listener.published().await, ["a cancelled"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
async fn cancel_of_a_waiting_job_publishes_cancelled(h: &Harness) {
    let q = waited_queue(h, "outcome_cancel", &["a"]).await;
    schedule(&q, "b").await;
    mark_job(h, &q, "b").await;
    let mut listener = Listener::open(h, &q).await;
    assert_eq!(
        q.jobs().cancel(&id("a")).await.unwrap(),
        CancelOutcome::Cancelled
    );
    assert_eq!(
        q.jobs().cancel(&id("b")).await.unwrap(),
        CancelOutcome::Cancelled
    );
    assert_eq!(listener.published().await, ["a cancelled", "b cancelled"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
async fn remove_of_an_unfinished_job_publishes_removed(h: &Harness) {
    let (q, mut listener) = one_waited_job_in_each_state(h, "outcome_remove").await;
    for name in ["pending", "later", "active", "done"] {
        assert!(q.jobs().remove(&id(name), IfActive::Force).await.unwrap());
    }
    assert_eq!(
        listener.published().await,
        ["pending removed", "later removed", "active removed"],
        "a finished job's outcome was published when it was decided"
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
async fn drain_publishes_removed_for_each_waited_job(h: &Harness) {
    let q = waited_queue(h, "outcome_drain", &["a"]).await;
    enqueue(&q, "b").await;
    schedule(&q, "c").await;
    mark_job(h, &q, "c").await;
    let mut listener = Listener::open(h, &q).await;
    let drained = q.admin().drain(DrainScope::PENDING_AND_SCHEDULED).await;
    assert_eq!(drained.unwrap(), 3);
    assert_eq!(listener.published().await, ["a removed", "c removed"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
async fn drain_deletes_a_job_key_of_another_type_and_publishes_the_rest(h: &Harness) {
    // DRAIN deletes what its sets name, whatever the key's type; reading
    // `waited` of a key that is not a hash must not refuse it half done.
    let q = waited_queue(h, "outcome_drain_wrong_type", &["a"]).await;
    schedule(&q, "s").await;
    let key = q.keys().job(&id("s"));
    common::set_a_string(h, &q, &key).await;
    let mut listener = Listener::open(h, &q).await;
    let drained = q.admin().drain(DrainScope::PENDING_AND_SCHEDULED).await;
    assert_eq!(drained.unwrap(), 2);
    assert_eq!(listener.published().await, ["a removed"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
async fn obliterate_publishes_removed_for_unfinished_jobs_only(h: &Harness) {
    let (q, mut listener) = one_waited_job_in_each_state(h, "outcome_obliterate").await;
    q.admin().pause().await.unwrap();
    q.admin().obliterate(IfActive::Force).await.unwrap();
    // The sets in the order OBLITERATE empties them: schedule, pending
    // (its fifo last), active; the finished ones publish nothing.
    assert_eq!(
        listener.published().await,
        ["later removed", "active removed", "pending removed"]
    );
}

#[echomq_testkit::case]
async fn repeat_add_publishes_removed_for_a_replaced_occurrence(h: &Harness) {
    let q = h.queue::<Value>("outcome_repeat");
    let first = (server_now(h, &q).await + 3_600_000).to_string();
    let add = ["k", "every hour", "{}", "FIRST", first.as_str()];
    raw_call(h, &q, "repeat_add", &add).await.unwrap();
    let occurrence = format!("repeat:k:{first}");
    mark_job(h, &q, &occurrence).await;
    mark_queue(h, &q).await;
    let mut listener = Listener::open(h, &q).await;
    raw_call(h, &q, "repeat_add", &["k", "every day", "{}"])
        .await
        .unwrap();
    assert_eq!(
        listener.published().await,
        [format!("{occurrence} removed")]
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
async fn a_queue_without_the_mark_publishes_nothing(h: &Harness) {
    // Every job waited for, but the queue never marked: its commands read
    // no job's `waited`.
    let q = h.queue::<Value>("outcome_unmarked");
    for name in ["a", "b", "c", "d", "e", "f"] {
        enqueue(&q, name).await;
        mark_job(h, &q, name).await;
    }
    let mut listener = Listener::open(h, &q).await;
    let a = claim(&q, "a").await;
    q.complete(&a.id, a.token, &json!(1)).await.unwrap();
    let b = claim(&q, "b").await;
    q.fail(&b.id, b.token, "x", FailAction::Dead).await.unwrap();
    let c = claim(&q, "c").await;
    q.fail(&c.id, c.token, "x", FailAction::Cancelled)
        .await
        .unwrap();
    q.jobs().cancel(&id("d")).await.unwrap();
    q.jobs().remove(&id("e"), IfActive::Refuse).await.unwrap();
    claim_and_let_stall(h, &q, "f").await;
    q.sweep_stalled(0, 100).await.unwrap();
    for name in ["g", "h"] {
        enqueue(&q, name).await;
        mark_job(h, &q, name).await;
    }
    assert_eq!(q.admin().drain(DrainScope::PENDING).await.unwrap(), 2);
    let none: Vec<String> = Vec::new();
    assert_eq!(listener.published().await, none);
    enqueue(&q, "i").await;
    mark_job(h, &q, "i").await;
    q.admin().pause().await.unwrap();
    q.admin().obliterate(IfActive::Force).await.unwrap();
    assert_eq!(listener.published().await, none);
}
