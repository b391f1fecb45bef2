//! The state invariant itself, on the pending set's rules of "The fifo"
//! (`docs/protocol.md`): a keyspace written by hand that keeps them
//! passes; each rule broken on purpose is reported.

use echomq_protocol::{JobId, Keyspace, QueueName};
use echomq_testkit::TestServer;
use echomq_testkit::invariant::check_invariant;
use redis::aio::MultiplexedConnection;

/// The keys of queue `name` under `emq`.
fn keys(name: &str) -> Keyspace {
    Keyspace::new("emq", &QueueName::new(name).unwrap()).unwrap()
}

/// Runs `cmd` on `conn`.
async fn run(conn: &mut MultiplexedConnection, cmd: &mut redis::Cmd) {
    let _: redis::Value = cmd.query_async(conn).await.unwrap();
}

/// The hash of pending job `id` of `priority` (stored only when not 0, as
/// the wires store it), and `group` when given; no membership.
async fn job(
    conn: &mut MultiplexedConnection,
    keys: &Keyspace,
    id: &str,
    priority: u8,
    group: Option<&str>,
) {
    let mut hset = redis::cmd("HSET");
    hset.arg(keys.job(&JobId::new(id).unwrap()))
        .arg("state")
        .arg("pending");
    if priority != 0 {
        hset.arg("priority").arg(priority);
    }
    if let Some(group) = group {
        hset.arg("group").arg(group);
    }
    run(conn, &mut hset).await;
}

/// `id` pushed at the tail of `fifo`.
async fn push(conn: &mut MultiplexedConnection, keys: &Keyspace, id: &str) {
    run(conn, redis::cmd("RPUSH").arg(keys.fifo()).arg(id)).await;
}

/// `id` a member of `pending`, in `priority`'s band.
async fn rank(conn: &mut MultiplexedConnection, keys: &Keyspace, id: &str, priority: u8) {
    let score = (u64::from(priority) << 44) + 1;
    run(
        conn,
        redis::cmd("ZADD").arg(keys.pending()).arg(score).arg(id),
    )
    .await;
}

/// The invariant's verdict on `keys`: the problems, empty when none.
async fn problems(server: &TestServer, keys: &Keyspace) -> String {
    match check_invariant(&[server.url()], keys).await {
        Ok(()) => String::new(),
        Err(problems) => problems,
    }
}

#[tokio::test]
async fn a_fifo_kept_to_the_rules_passes() {
    let server = TestServer::start();
    let mut conn = server.connection().await;
    let q = keys("kept");
    for id in ["a", "b"] {
        job(&mut conn, &q, id, 0, None).await;
        push(&mut conn, &q, id).await;
    }
    job(&mut conn, &q, "c", 3, None).await;
    rank(&mut conn, &q, "c", 3).await;
    assert_eq!(problems(&server, &q).await, "");
}

#[tokio::test]
async fn each_broken_rule_of_the_fifo_is_reported() {
    let server = TestServer::start();
    let mut conn = server.connection().await;

    let twice = keys("twice");
    job(&mut conn, &twice, "a", 0, None).await;
    push(&mut conn, &twice, "a").await;
    push(&mut conn, &twice, "a").await;
    let found = problems(&server, &twice).await;
    assert!(found.contains("job a is in fifo 2 times"), "{found}");

    let both = keys("both");
    job(&mut conn, &both, "a", 0, None).await;
    push(&mut conn, &both, "a").await;
    rank(&mut conn, &both, "a", 0).await;
    let found = problems(&server, &both).await;
    assert!(
        found.contains("job a is in both pending and fifo"),
        "{found}"
    );

    // Priority 0 belongs in fifo, on a queue without groups only; the
    // priority field absent or 0 both say 0.
    let urgent = keys("urgent");
    job(&mut conn, &urgent, "a", 0, None).await;
    rank(&mut conn, &urgent, "a", 0).await;
    let found = problems(&server, &urgent).await;
    assert!(
        found.contains("job a of priority 0 is in pending on a queue without groups"),
        "{found}"
    );
    run(
        &mut conn,
        redis::cmd("HSET")
            .arg(urgent.job(&JobId::new("a").unwrap()))
            .arg("priority")
            .arg(0),
    )
    .await;
    let found = problems(&server, &urgent).await;
    assert!(
        found.contains("job a of priority 0 is in pending"),
        "{found}"
    );
    run(
        &mut conn,
        redis::cmd("HSET").arg(urgent.meta()).arg("groups").arg(1),
    )
    .await;
    let found = problems(&server, &urgent).await;
    assert!(!found.contains("job a of priority 0"), "{found}");

    let ranked = keys("ranked");
    job(&mut conn, &ranked, "a", 2, None).await;
    push(&mut conn, &ranked, "a").await;
    let found = problems(&server, &ranked).await;
    assert!(
        found.contains("job a of priority Some(\"2\") is in fifo, which holds priority 0 only"),
        "{found}"
    );

    let grouped = keys("grouped");
    job(&mut conn, &grouped, "a", 0, None).await;
    push(&mut conn, &grouped, "a").await;
    run(
        &mut conn,
        redis::cmd("HSET").arg(grouped.meta()).arg("groups").arg(1),
    )
    .await;
    let found = problems(&server, &grouped).await;
    assert!(
        found.contains("the queue has the groups mark but a fifo of 1 jobs"),
        "{found}"
    );

    let in_group = keys("in_group");
    job(&mut conn, &in_group, "a", 0, Some("g")).await;
    push(&mut conn, &in_group, "a").await;
    let found = problems(&server, &in_group).await;
    assert!(found.contains("job a of group g is in fifo"), "{found}");

    let typed = keys("typed");
    run(&mut conn, redis::cmd("SET").arg(typed.fifo()).arg("x")).await;
    let found = problems(&server, &typed).await;
    assert!(found.contains("fifo is a string, not a list"), "{found}");
}
