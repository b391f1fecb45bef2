//! The metrics cases: each takes a harness (a server on wire 4 or 6, or a
//! cluster) and its own queue, and checks the state invariant as it goes.

use super::common::{Harness, command_stats, raw_call, server_now};
use echomq::protocol::metrics::{Resolution, Windows, bin};
use echomq::{
    Error, FailAction, JobId, MetricsRange, MetricsSettings, MetricsWindow, NewJob, Queue, Wire,
};
use echomq_testkit::invariant::queue_keys;
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);
const BOUND: Duration = Duration::from_secs(10);

fn id(id: &str) -> JobId {
    JobId::new(id).unwrap()
}

async fn put(q: &Queue<Value>, name: &str, attempts: u64) {
    let job = NewJob::new(json!(name))
        .id(name)
        .unwrap()
        .attempts(attempts);
    assert!(q.enqueue(job).await.unwrap().created, "{name} created");
}

/// Claims one job, which must be `name`; returns its token.
async fn claim(q: &Queue<Value>, name: &str) -> u64 {
    let claimed = q.claim("w", LEASE, 1).await.unwrap();
    assert_eq!(claimed.len(), 1, "claimed {name}");
    assert_eq!(claimed[0].id.as_str(), name);
    claimed[0].token
}

/// The last hour of fine windows, added up.
async fn last_hour(q: &Queue<Value>) -> MetricsWindow {
    let read = q
        .metrics(MetricsRange::Last(Duration::from_secs(3600)))
        .await
        .unwrap();
    assert_eq!(read.resolution, Resolution::Fine);
    read.summary()
}

/// Every outcome once or more: completed 2, failed 1 (then completed),
/// dead 1, cancelled 2 (one running, one waiting), stalled 1, and a
/// rate-limited attempt that counts nothing.
#[echomq_testkit::case(cluster)]
pub(super) async fn a_known_run_counts_each_outcome_in_the_window_and_the_total(h: &Harness) {
    let q = h.queue::<Value>("m_known");
    for (name, attempts) in [("ok1", 3), ("ok2", 3), ("retry", 3), ("dead", 1), ("cx", 3)] {
        put(&q, name, attempts).await;
    }
    let t = claim(&q, "ok1").await;
    q.complete(&id("ok1"), t, &()).await.unwrap();
    let t = claim(&q, "ok2").await;
    q.complete(&id("ok2"), t, &()).await.unwrap();
    let t = claim(&q, "retry").await;
    q.fail(&id("retry"), t, "boom", FailAction::Retry(Duration::ZERO))
        .await
        .unwrap();
    let t = claim(&q, "dead").await;
    q.fail(&id("dead"), t, "boom", FailAction::Retry(Duration::ZERO))
        .await
        .unwrap();
    let t = claim(&q, "cx").await;
    q.fail(&id("cx"), t, "stop", FailAction::Cancelled)
        .await
        .unwrap();
    // The retried job runs again; a rate-limited attempt counts nothing.
    let t = claim(&q, "retry").await;
    q.fail(
        &id("retry"),
        t,
        "429",
        FailAction::RateLimited(Duration::from_millis(1)),
    )
    .await
    .unwrap();
    let t = wait_for("the hold to end", BOUND, || async {
        q.claim("w", LEASE, 1).await.unwrap().pop().map(|c| c.token)
    })
    .await;
    q.complete(&id("retry"), t, &()).await.unwrap();
    // A waiting job cancelled, and a stalled one swept back.
    put(&q, "waiting", 3).await;
    q.jobs().cancel(&id("waiting")).await.unwrap();
    put(&q, "stall", 3).await;
    let claimed = q.claim("w", Duration::from_millis(1), 1).await.unwrap();
    assert_eq!(claimed[0].id.as_str(), "stall");
    wait_for("the lease to lapse", BOUND, || async {
        q.sweep_stalled(5, 10).await.unwrap().recovered == 1
    })
    .await;
    h.check(&q).await;

    let total = q.metrics_total().await.unwrap();
    let want = (3, 1, 1, 2, 1);
    let got = |w: &MetricsWindow| (w.completed, w.failed, w.dead, w.cancelled, w.stalled);
    assert_eq!(got(&total), want);
    // One wait and one run sample per job that left active with an
    // outcome: 3 + 1 + 1 + 1 (running) + 1 (not the waiting cancellation,
    // nor the rate-limited attempt).
    assert_eq!(total.wait.count(), 7);
    assert_eq!(total.run.count(), 7);
    assert_eq!(got(&last_hour(&q).await), want);
    assert_eq!(last_hour(&q).await.run.count(), 7);
}

/// Moves the job in hand's clocks back, so its samples are known: ready
/// `wait_ms` before its claim, claimed `run_ms` before now (server clock).
/// Returns the token its holder has then: a token follows `claimed_at`.
async fn backdate(h: &Harness, q: &Queue<Value>, name: &str, wait_ms: u64, run_ms: u64) -> u64 {
    let now = server_now(h, q).await;
    backdate_from(h, q, name, now, (wait_ms, run_ms)).await
}

/// [`backdate`] from a given `now`: ready `wait_ms` before its claim,
/// claimed `run_ms` before `now`. Returns the job's token then.
async fn backdate_from(
    h: &Harness,
    q: &Queue<Value>,
    name: &str,
    now: u64,
    (wait_ms, run_ms): (u64, u64),
) -> u64 {
    let claimed = now - run_ms;
    let _: () = redis::cmd("HSET")
        .arg(q.keys().job(&id(name)))
        .arg("claimed_at")
        .arg(claimed)
        .arg("run_at")
        .arg(claimed - wait_ms)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
    let record = q.jobs().get(&id(name)).await.unwrap().unwrap();
    record.token().expect("a claimed job's token")
}

/// A histogram's bins holding `count` samples of `ms` for each pair.
fn bins(samples: &[(u64, u64)]) -> [u64; echomq::protocol::metrics::BINS] {
    let mut bins = [0u64; echomq::protocol::metrics::BINS];
    for &(ms, count) in samples {
        bins[bin(ms)] += count;
    }
    bins
}

#[echomq_testkit::case]
pub(super) async fn wait_and_run_samples_fall_in_their_bins(h: &Harness) {
    let q = h.queue::<Value>("m_bins");
    // Waits of 40 ms and exactly 5 s (a bound: its bin includes it); runs
    // of 20 s and 2 min (each bin wide enough that the ms the test itself
    // takes cannot move a sample out of it).
    for (name, wait, run) in [("a", 40, 20_000), ("b", 5_000, 120_000)] {
        put(&q, name, 3).await;
        claim(&q, name).await;
        let t = backdate(h, &q, name, wait, run).await;
        q.complete(&id(name), t, &()).await.unwrap();
    }
    let total = q.metrics_total().await.unwrap();
    assert_eq!(total.wait.bins, bins(&[(40, 1), (5_000, 1)]));
    assert_eq!(total.wait.sum_ms, 5_040);
    assert_eq!(bin(5_000), bin(2_501), "5 s falls in (2.5, 5] s");
    assert_eq!(total.run.bins, bins(&[(25_000, 1), (250_000, 1)]));
    assert!(
        (140_000..150_000).contains(&total.run.sum_ms),
        "{}",
        total.run.sum_ms
    );
    // The median wait lies in the lower sample's bin, (25, 50] ms.
    let median = total.wait.quantile(0.5).unwrap();
    assert!(
        median > Duration::from_millis(25) && median <= Duration::from_millis(50),
        "{median:?}"
    );
    assert_eq!(last_hour(&q).await.wait, total.wait);
}

/// One completion call of jobs with different clocks samples each job on
/// its own: b and c were claimed at the same instant but waited 5 s and
/// 40 ms; d's clocks are c's.
#[echomq_testkit::case]
pub(super) async fn a_bulk_completion_samples_each_job_on_its_own(h: &Harness) {
    let q = h.queue::<Value>("m_bulk_bins");
    for name in ["a", "b", "c", "d"] {
        put(&q, name, 3).await;
    }
    let claimed = q.claim("w", LEASE, 4).await.unwrap();
    let names: Vec<&str> = claimed.iter().map(|job| job.id.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "d"]);
    let now = server_now(h, &q).await;
    let clocks = [(40, 20_000), (5_000, 120_000), (40, 120_000), (40, 120_000)];
    let mut tokens = Vec::new();
    for (job, clock) in claimed.iter().zip(clocks) {
        let token = backdate_from(h, &q, job.id.as_str(), now, clock).await;
        tokens.push(token.to_string());
    }
    let mut args = Vec::new();
    for (job, token) in claimed.iter().zip(&tokens) {
        args.extend([job.id.as_str(), token.as_str(), ""]);
    }
    raw_call(h, &q, "complete_bulk", &args).await.unwrap();
    let total = q.metrics_total().await.unwrap();
    assert_eq!(total.wait.bins, bins(&[(40, 3), (5_000, 1)]));
    assert_eq!(total.wait.sum_ms, 5_120);
    assert_eq!(total.run.bins, bins(&[(25_000, 1), (250_000, 3)]));
    assert!(
        (380_000..390_000).contains(&total.run.sum_ms),
        "{}",
        total.run.sum_ms
    );
}

#[echomq_testkit::case]
pub(super) async fn a_bulk_completion_writes_each_key_once(h: &Harness) {
    let q = h.queue::<Value>("m_bulk");
    // Windows of a day, so both batches fall in the same ones.
    let day = 86_400_000;
    let windows = Windows {
        fine_ms: day,
        fine_keep: 2,
        coarse_ms: day,
        coarse_keep: 2,
    };
    q.configure_metrics(&MetricsSettings {
        enabled: true,
        windows,
    })
    .await
    .unwrap();
    for i in 0..40 {
        put(&q, &format!("j{i}"), 3).await;
    }
    // Two batches of 20 in one window: the second finds the keys there.
    let mut conn = h.raw(&q).await;
    let mut counted = async || {
        let mut calls = [0; 4];
        for (n, command) in calls
            .iter_mut()
            .zip(["hgetall", "hmget", "hset", "pexpireat"])
        {
            *n = command_stats(&mut conn, &[command], &["calls"]).await;
        }
        calls
    };
    let mut calls = Vec::new();
    for _ in 0..2 {
        let claimed = q.claim("w", LEASE, 20).await.unwrap();
        let before = counted().await;
        let tokens: Vec<String> = claimed.iter().map(|c| c.token.to_string()).collect();
        let mut args = Vec::new();
        for (job, token) in claimed.iter().zip(&tokens) {
            args.extend([job.id.as_str(), token.as_str(), ""]);
        }
        raw_call(h, &q, "complete_bulk", &args).await.unwrap();
        let after = counted().await;
        calls.push([0, 1, 2, 3].map(|i| after[i] - before[i]));
    }
    let total = q.metrics_total().await.unwrap();
    assert_eq!(total.completed, 40);
    assert_eq!(total.wait.count(), 40);
    assert_eq!(total.run.count(), 40);
    if h.connector.wire() == Wire::Script {
        // Wire 4: the settings read once (HGETALL), the 20 jobs read and
        // written one call each, and each metrics key (total, minute, hour)
        // read once and written once per call, plus one PEXPIREAT NX per
        // window the call creates: the second batch finds both windows
        // there, their expiry set. (Wire 6 writes the keys directly: no
        // commands to count.)
        assert_eq!(
            calls,
            [[1, 23, 23, 2], [1, 23, 23, 0]],
            "HGETALL, HMGET, HSET and PEXPIREAT calls per batch"
        );
    }
    // The windows' expiry is set once, by the first batch: two days (keep
    // 2) after the window starts.
    let now = server_now(h, &q).await;
    let window = q.keys().metrics_window(Resolution::Fine, now - now % day);
    let expires: i64 = redis::cmd("PEXPIRETIME")
        .arg(&window)
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    assert_eq!(expires, (now - now % day + 2 * day) as i64);
    h.check(&q).await;
}

/// Windows of 300 ms, three kept; coarse windows of 1.2 s, two kept.
fn small() -> MetricsSettings {
    MetricsSettings {
        enabled: true,
        windows: Windows {
            fine_ms: 300,
            fine_keep: 3,
            coarse_ms: 1_200,
            coarse_keep: 2,
        },
    }
}

/// Completes one new job named `name`; returns the server's clock read
/// just before and just after the completion, which happened between.
async fn complete_one(h: &Harness, q: &Queue<Value>, name: &str) -> (u64, u64) {
    put(q, name, 3).await;
    let t = claim(q, name).await;
    let before = server_now(h, q).await;
    q.complete(&id(name), t, &()).await.unwrap();
    (before, server_now(h, q).await)
}

/// Waits until the server's clock reaches `ms`.
async fn until_server_ms(h: &Harness, q: &Queue<Value>, ms: u64) {
    wait_for("the server clock", BOUND, || async {
        server_now(h, q).await >= ms
    })
    .await;
}

/// The starts of the `width` windows that the instants `from..=to` fall in.
fn window_starts(from: u64, to: u64, width: u64) -> Vec<u64> {
    (from - from % width..=to).step_by(width as usize).collect()
}

#[echomq_testkit::case]
pub(super) async fn windows_roll_over_and_expire_on_the_server_clock(h: &Harness) {
    let q = h.queue::<Value>("m_roll");
    q.configure_metrics(&small()).await.unwrap();
    assert_eq!(q.metrics_settings().await.unwrap(), small());
    let (a_from, a_to) = complete_one(h, &q, "a").await;
    // Into a later fine window than any `a` can have fallen in.
    until_server_ms(h, &q, a_to - a_to % 300 + 300).await;
    let (b_from, b_to) = complete_one(h, &q, "b").await;
    let read = q
        .metrics(MetricsRange::Last(Duration::from_millis(2 * 300)))
        .await
        .unwrap();
    assert_eq!(read.resolution, Resolution::Fine);
    assert_eq!(read.width, Duration::from_millis(300));
    let counted: Vec<(u64, u64)> = read
        .windows
        .iter()
        .filter(|w| w.completed > 0)
        .map(|w| (w.start_ms, w.completed))
        .collect();
    let [(first_start, 1), (second_start, 1)] = counted[..] else {
        panic!("two windows of one completion each: {counted:?}");
    };
    assert!(window_starts(a_from, a_to, 300).contains(&first_start));
    assert!(window_starts(b_from, b_to, 300).contains(&second_start));
    // The coarse windows hold both, whichever of them each fell in.
    let mut completed = 0;
    for start in window_starts(a_from, b_to, 1_200) {
        let key = q.keys().metrics_window(Resolution::Coarse, start);
        completed += field(h, &q, &key, "completed").await;
    }
    assert_eq!(completed, 2);
    // A window expires `keep` widths after it starts: the first fine one
    // at first_start + 900 ms, on the server clock.
    let first_key = q.keys().metrics_window(Resolution::Fine, first_start);
    let expires: i64 = redis::cmd("PEXPIRETIME")
        .arg(&first_key)
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    assert_eq!(expires, (first_start + 900) as i64);
    // Expired once the clock is past that instant.
    until_server_ms(h, &q, first_start + 901).await;
    let exists: bool = redis::cmd("EXISTS")
        .arg(&first_key)
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    assert!(!exists, "the first window is trimmed");
    // The total keeps everything.
    assert_eq!(q.metrics_total().await.unwrap().completed, 2);
}

/// One integer field of a hash (0 when absent).
async fn field(h: &Harness, q: &Queue<Value>, key: &str, name: &str) -> u64 {
    let value: Option<u64> = redis::cmd("HGET")
        .arg(key)
        .arg(name)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
    value.unwrap_or(0)
}

#[echomq_testkit::case]
pub(super) async fn a_range_reads_every_window_oldest_first(h: &Harness) {
    let q = h.queue::<Value>("m_range");
    complete_one(h, &q, "a").await;
    let read = q
        .metrics(MetricsRange::Last(Duration::from_secs(3600)))
        .await
        .unwrap();
    // An hour of minutes: 60 windows, or 61 when it does not start on one.
    assert!(
        (60..=61).contains(&read.windows.len()),
        "{}",
        read.windows.len()
    );
    assert!(
        read.windows
            .windows(2)
            .all(|w| w[1].start_ms == w[0].start_ms + 60_000)
    );
    assert_eq!(read.windows.last().unwrap().completed, 1);
    assert_eq!(read.summary().completed, 1);
    // Two weeks back reads hours.
    let read = q
        .metrics(MetricsRange::Last(Duration::from_secs(14 * 86_400)))
        .await
        .unwrap();
    assert_eq!(read.resolution, Resolution::Coarse);
    assert_eq!(read.summary().completed, 1);
}

#[echomq_testkit::case]
pub(super) async fn metrics_off_reads_and_writes_nothing(h: &Harness) {
    let q = h.queue::<Value>("m_off");
    q.configure_metrics(&MetricsSettings {
        enabled: false,
        ..MetricsSettings::default()
    })
    .await
    .unwrap();
    complete_one(h, &q, "a").await;
    put(&q, "b", 3).await;
    q.jobs().cancel(&id("b")).await.unwrap();
    let keys = queue_keys(h.urls(), q.keys()).await.unwrap();
    assert!(!keys.iter().any(|k| k.contains(":metrics:")), "{keys:?}");
    assert_eq!(q.metrics_total().await.unwrap(), MetricsWindow::default());
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn obliterate_deletes_the_metrics(h: &Harness) {
    let q = h.queue::<Value>("m_obliterate");
    complete_one(h, &q, "a").await;
    let keys = queue_keys(h.urls(), q.keys()).await.unwrap();
    assert_eq!(
        keys.iter().filter(|k| k.contains(":metrics:")).count(),
        3,
        "{keys:?}"
    );
    q.admin().pause().await.unwrap();
    q.admin()
        .obliterate(echomq::IfActive::Refuse)
        .await
        .unwrap();
    assert!(queue_keys(h.urls(), q.keys()).await.unwrap().is_empty());
}

#[echomq_testkit::case]
pub(super) async fn a_metrics_key_of_the_wrong_type_refuses_wrongtype_and_writes_nothing(
    h: &Harness,
) {
    let q = h.queue::<Value>("m_wrongtype");
    put(&q, "a", 3).await;
    let t = claim(&q, "a").await;
    let _: () = redis::cmd("SET")
        .arg(q.keys().metrics_total())
        .arg("x")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let before = queue_dump(h, &q).await;
    let err = raw_call(h, &q, "complete", &["a", &t.to_string()])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("WRONGTYPE"), "{err}");
    assert_eq!(queue_dump(h, &q).await, before, "nothing written");
    let _: () = redis::cmd("DEL")
        .arg(q.keys().metrics_total())
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    q.complete(&id("a"), t, &()).await.unwrap();
    assert_eq!(q.metrics_total().await.unwrap().completed, 1);
}

/// Every key of the queue with its type and content, as DUMP holds it.
async fn queue_dump(h: &Harness, q: &Queue<Value>) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for key in queue_keys(h.urls(), q.keys()).await.unwrap() {
        let dump: Vec<u8> = redis::cmd("DUMP")
            .arg(&key)
            .query_async(&mut h.raw(q).await)
            .await
            .unwrap();
        out.push((key, dump));
    }
    out
}

/// `settings` refused naming `name`, and nothing stored.
async fn refused_and_unchanged(q: &Queue<Value>, settings: MetricsSettings, name: &str) {
    let err = q.configure_metrics(&settings).await.unwrap_err();
    assert!(
        matches!(&err, Error::BadArgument { name: refused, .. } if *refused == name),
        "{err}"
    );
    assert_eq!(
        q.metrics_settings().await.unwrap(),
        MetricsSettings::default()
    );
}

#[echomq_testkit::case]
pub(super) async fn a_window_zero_ms_wide_is_refused_bad_argument(h: &Harness) {
    let mut settings = small();
    settings.windows.fine_ms = 0;
    refused_and_unchanged(&h.queue("m_zero"), settings, "fine_ms").await;
}

#[echomq_testkit::case]
pub(super) async fn keeping_more_windows_than_the_most_is_refused_bad_argument(h: &Harness) {
    let mut settings = small();
    settings.windows.coarse_keep = echomq::MAX_WINDOWS + 1;
    refused_and_unchanged(&h.queue("m_keep"), settings, "coarse_keep").await;
}
