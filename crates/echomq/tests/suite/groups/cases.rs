//! The groups' transitions: the round robin of a claim, each per-group
//! control and each of its refusals, and the group bookkeeping of every
//! transition that moves a job in or out of `pending` or `active`. Each
//! case takes a harness (a server on wire 4 or 6, or a cluster) and its own
//! queue, and checks the state invariant (groups included) as it goes.

use super::common::{
    Harness, claimed_ids, error_text, events, raw_call, refusal, retry_now, server_now,
};
use echomq::{Error, FailAction, JobId, NewJob, Queue, Refusal};
use echomq_testkit::invariant::queue_keys;
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);
/// A window no test sees end.
const DAY: Duration = Duration::from_secs(86_400);
const BOUND: Duration = Duration::from_secs(10);

fn id(id: &str) -> JobId {
    JobId::new(id).unwrap()
}

/// Enqueues job `name` in `group` (none for an ungrouped job).
async fn put(q: &Queue<Value>, name: &str, group: Option<&str>, priority: u8) {
    let mut job = NewJob::new(json!(name))
        .id(name)
        .unwrap()
        .priority(priority);
    if let Some(group) = group {
        job = job.group(group);
    }
    assert!(q.enqueue(job).await.unwrap().created, "{name} created");
}

/// Three jobs of a, two of b, two ungrouped, one of c, in that order.
async fn mixed(q: &Queue<Value>) {
    for (name, group) in [
        ("a1", Some("a")),
        ("a2", Some("a")),
        ("a3", Some("a")),
        ("b1", Some("b")),
        ("b2", Some("b")),
        ("u1", None),
        ("u2", None),
        ("c1", Some("c")),
    ] {
        put(q, name, group, 0).await;
    }
}

/// The keys of the queue that belong to groups (lanes, hashes, the sets).
async fn group_keys(h: &Harness, q: &Queue<Value>) -> Vec<String> {
    let base = q.keys().base().to_string();
    queue_keys(h.urls(), q.keys())
        .await
        .unwrap()
        .into_iter()
        .filter(|key| {
            ["glane:", "group:", "groups", "group_index"]
                .iter()
                .any(|part| key[base.len()..].starts_with(&format!(":{part}")))
        })
        .collect()
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_claim_takes_one_head_per_group_round_robin(h: &Harness) {
    let q = h.queue::<Value>("rr_single");
    mixed(&q).await;
    h.check(&q).await;
    let mut order = Vec::new();
    for _ in 0..9 {
        order.extend(claimed_ids(&q, 1).await);
        h.check(&q).await;
    }
    assert_eq!(order, ["a1", "b1", "u1", "c1", "a2", "b2", "u2", "a3"]);
}

#[echomq_testkit::case]
pub(super) async fn a_claim_of_count_n_spreads_across_groups_in_the_same_order(h: &Harness) {
    let q = h.queue::<Value>("rr_count");
    mixed(&q).await;
    assert_eq!(
        claimed_ids(&q, 5).await,
        ["a1", "b1", "u1", "c1", "a2"],
        "one head per group, then around again"
    );
    h.check(&q).await;
    assert_eq!(claimed_ids(&q, 10).await, ["b2", "u2", "a3"]);
    h.check(&q).await;
    assert!(
        group_keys(h, &q)
            .await
            .iter()
            .all(|key| !key.contains("glane"))
    );
}

#[echomq_testkit::case]
pub(super) async fn inside_a_group_priority_then_first_in_first_out(h: &Harness) {
    let q = h.queue::<Value>("rr_priority");
    for (name, priority) in [("x1", 5), ("x2", 0), ("x3", 5), ("x4", 0)] {
        put(&q, name, Some("g"), priority).await;
    }
    // Another group's lower-priority job still gets its turn: the round
    // robin goes by group, priority orders a group's own jobs.
    put(&q, "y1", Some("h"), 9).await;
    assert_eq!(claimed_ids(&q, 5).await, ["x2", "y1", "x4", "x1", "x3"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn ungrouped_jobs_take_part_as_one_more_group(h: &Harness) {
    let q = h.queue::<Value>("rr_ungrouped");
    // Ungrouped jobs pending before the queue's first group join the round
    // robin as one lane, ahead of the group that came later.
    for name in ["u1", "u2", "u3"] {
        put(&q, name, None, 0).await;
    }
    put(&q, "g1", Some("g"), 0).await;
    put(&q, "g2", Some("g"), 0).await;
    h.check(&q).await;
    assert_eq!(claimed_ids(&q, 5).await, ["u1", "g1", "u2", "g2", "u3"]);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_group_cap_holds_its_jobs_back_until_one_finishes(h: &Harness) {
    let q = h.queue::<Value>("group_cap");
    let a = q.admin().group("a").unwrap();
    let cap = a.set_concurrency_cap(1).await.unwrap();
    assert_eq!((cap.max, cap.active), (1, 0));
    for name in ["a1", "a2", "a3"] {
        put(&q, name, Some("a"), 0).await;
    }
    put(&q, "b1", Some("b"), 0).await;
    put(&q, "b2", Some("b"), 0).await;
    let first = q.claim("w", LEASE, 10).await.unwrap();
    let ids: Vec<&str> = first.iter().map(|job| job.id.as_str()).collect();
    assert_eq!(ids, ["a1", "b1", "b2"], "a gives one, then is at its cap");
    h.check(&q).await;
    assert!(claimed_ids(&q, 10).await.is_empty(), "a is at its cap");
    let cap = a.concurrency_cap().await.unwrap();
    assert_eq!((cap.max, cap.active), (1, 1));
    q.complete(&first[0].id, first[0].token, &json!(null))
        .await
        .unwrap();
    h.check(&q).await;
    assert_eq!(
        claimed_ids(&q, 10).await,
        ["a2"],
        "a finishing job made room"
    );
    a.clear_concurrency_cap().await.unwrap();
    h.check(&q).await;
    assert_eq!(claimed_ids(&q, 10).await, ["a3"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_group_rate_limit_holds_its_jobs_until_the_window_reopens(h: &Harness) {
    let q = h.queue::<Value>("group_limit");
    let a = q.admin().group("a").unwrap();
    let limit = a.set_rate_limit(2, DAY).await.unwrap();
    assert_eq!((limit.max, limit.per, limit.used), (2, DAY, 0));
    for name in ["a1", "a2", "a3"] {
        put(&q, name, Some("a"), 0).await;
    }
    put(&q, "b1", Some("b"), 0).await;
    assert_eq!(claimed_ids(&q, 10).await, ["a1", "b1", "a2"]);
    h.check(&q).await;
    assert!(claimed_ids(&q, 10).await.is_empty(), "a's window is spent");
    assert_eq!(a.rate_limit().await.unwrap().used, 2);
    // A window of 200 ms: a's next one opens soon, and the claim after it
    // takes a3.
    a.set_rate_limit(2, Duration::from_millis(200))
        .await
        .unwrap();
    h.check(&q).await;
    let taken = std::sync::Mutex::new(Vec::new());
    wait_for("a's window to reopen", BOUND, || async {
        let ids = claimed_ids(&q, 10).await;
        let mut taken = taken.lock().unwrap();
        taken.extend(ids);
        !taken.is_empty()
    })
    .await;
    let taken = taken.into_inner().unwrap();
    assert_eq!(taken, ["a3"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_paused_group_waits_and_the_rest_flows(h: &Harness) {
    let q = h.queue::<Value>("group_pause");
    put(&q, "a1", Some("a"), 0).await;
    put(&q, "a2", Some("a"), 0).await;
    put(&q, "b1", Some("b"), 0).await;
    let a = q.admin().group("a").unwrap();
    a.pause().await.unwrap();
    h.check(&q).await;
    assert!(a.counts().await.unwrap().paused);
    assert_eq!(claimed_ids(&q, 10).await, ["b1"]);
    assert!(claimed_ids(&q, 10).await.is_empty(), "a waits");
    a.resume().await.unwrap();
    h.check(&q).await;
    assert_eq!(claimed_ids(&q, 10).await, ["a1", "a2"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn group_counts_and_the_list_page_by_name(h: &Harness) {
    let q = h.queue::<Value>("group_list");
    for (i, group) in ["g1", "g2", "g3", "g4", "g5"].into_iter().enumerate() {
        for n in 0..=i {
            put(&q, &format!("{group}-{n}"), Some(group), 0).await;
        }
    }
    let admin = q.admin();
    admin
        .group("g3")
        .unwrap()
        .set_concurrency_cap(2)
        .await
        .unwrap();
    admin
        .group("g4")
        .unwrap()
        .set_rate_limit(7, Duration::from_secs(1))
        .await
        .unwrap();
    claimed_ids(&q, 1).await;
    let counts = admin.group("g1").unwrap().counts().await.unwrap();
    assert_eq!(
        (counts.pending, counts.active, counts.paused),
        (0, 1, false)
    );
    let counts = admin.group("g4").unwrap().counts().await.unwrap();
    assert_eq!(
        (counts.pending, counts.limit_max, counts.limit_per),
        (4, 7, Duration::from_secs(1))
    );
    let names = |page: Vec<echomq::GroupCounts>| -> Vec<String> {
        page.into_iter().map(|group| group.group).collect()
    };
    assert_eq!(names(admin.groups(None, 2).await.unwrap()), ["g1", "g2"]);
    let page = admin.groups(Some("g2"), 2).await.unwrap();
    assert_eq!(page[0].concurrency, 2);
    assert_eq!(names(page), ["g3", "g4"]);
    assert_eq!(names(admin.groups(Some("g4"), 2).await.unwrap()), ["g5"]);
    assert!(admin.groups(Some("g5"), 2).await.unwrap().is_empty());
    let none = admin.group("nobody").unwrap().counts().await.unwrap();
    assert_eq!((none.pending, none.active, none.concurrency), (0, 0, 0));
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn settings_make_a_group_and_clearing_them_leaves_no_keys(h: &Harness) {
    let q = h.queue::<Value>("group_settings");
    let idle = q.admin().group("idle").unwrap();
    idle.set_concurrency_cap(3).await.unwrap();
    idle.pause().await.unwrap();
    h.check(&q).await;
    assert_eq!(q.admin().groups(None, 10).await.unwrap()[0].group, "idle");
    idle.clear_concurrency_cap().await.unwrap();
    idle.resume().await.unwrap();
    idle.set_rate_limit(1, DAY).await.unwrap();
    idle.clear_rate_limit().await.unwrap();
    h.check(&q).await;
    assert!(q.admin().groups(None, 10).await.unwrap().is_empty());
    assert!(
        group_keys(h, &q).await.is_empty(),
        "a group without jobs or settings has no keys"
    );
}

#[echomq_testkit::case]
pub(super) async fn the_stalled_sweep_returns_a_grouped_job_to_its_lane(h: &Harness) {
    let q = h.queue::<Value>("group_stalled");
    put(&q, "a1", Some("a"), 0).await;
    let job = q
        .claim_one("w", Duration::from_millis(1))
        .await
        .unwrap()
        .unwrap();
    let deadline = server_now(h, &q).await + 1;
    wait_for("the lease to run out", BOUND, || async {
        server_now(h, &q).await > deadline
    })
    .await;
    let swept = q.sweep_stalled(5, 100).await.unwrap();
    assert_eq!(swept.recovered, 1);
    h.check(&q).await;
    let counts = q.admin().group("a").unwrap().counts().await.unwrap();
    assert_eq!((counts.pending, counts.active), (1, 0));
    assert_eq!(claimed_ids(&q, 1).await, [job.id.as_str()]);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn cancel_remove_and_drain_take_jobs_out_of_their_lanes(h: &Harness) {
    let q = h.queue::<Value>("group_delete");
    mixed(&q).await;
    q.jobs().cancel(&id("a1")).await.unwrap();
    h.check(&q).await;
    q.jobs()
        .remove(&id("c1"), echomq::IfActive::Refuse)
        .await
        .unwrap();
    h.check(&q).await;
    let running = q.claim_one("w", LEASE).await.unwrap().unwrap();
    assert_eq!(running.id.as_str(), "a2");
    q.jobs()
        .remove(&running.id, echomq::IfActive::Force)
        .await
        .unwrap();
    h.check(&q).await;
    assert_eq!(
        q.admin().drain(echomq::DrainScope::PENDING).await.unwrap(),
        5
    );
    h.check(&q).await;
    assert!(
        group_keys(h, &q)
            .await
            .iter()
            .all(|key| key.ends_with(":groups") || key.contains("index")),
        "no lane or group hash is left: {:?}",
        group_keys(h, &q).await
    );
}

#[echomq_testkit::case]
pub(super) async fn delay_requeue_and_reprocess_keep_the_group_exact(h: &Harness) {
    let q = h.queue::<Value>("group_moves");
    put(&q, "a1", Some("a"), 0).await;
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.delay(&job.id, job.token, DAY).await.unwrap();
    h.check(&q).await;
    q.jobs().requeue(&job.id).await.unwrap();
    h.check(&q).await;
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.jobs().requeue(&job.id).await.unwrap();
    h.check(&q).await;
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.fail(&job.id, job.token, "boom", FailAction::Dead)
        .await
        .unwrap();
    h.check(&q).await;
    q.jobs().reprocess(&job.id).await.unwrap();
    h.check(&q).await;
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    retry_now(&q, &job, "again").await;
    h.check(&q).await;
    assert_eq!(claimed_ids(&q, 1).await, ["a1"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn scheduled_grouped_jobs_enter_their_lane_when_promoted(h: &Harness) {
    let q = h.queue::<Value>("group_scheduled");
    put(&q, "now", Some("a"), 0).await;
    let later = NewJob::new(json!("later"))
        .id("later")
        .unwrap()
        .group("b")
        .after(Duration::from_millis(50));
    q.enqueue(later).await.unwrap();
    h.check(&q).await;
    let due = server_now(h, &q).await + 60;
    wait_for("the run-at to pass", BOUND, || async {
        server_now(h, &q).await > due
    })
    .await;
    // The claim promotes `later` into b's lane; on a queue with groups the
    // jobs a claim promotes are claimable from the next claim on.
    assert_eq!(claimed_ids(&q, 5).await, ["now"]);
    h.check(&q).await;
    assert_eq!(claimed_ids(&q, 5).await, ["later"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn obliterate_leaves_no_group_key(h: &Harness) {
    let q = h.queue::<Value>("group_obliterate");
    mixed(&q).await;
    q.admin().group("z").unwrap().pause().await.unwrap();
    claimed_ids(&q, 2).await;
    q.admin().pause().await.unwrap();
    q.admin().obliterate(echomq::IfActive::Force).await.unwrap();
    assert!(queue_keys(h.urls(), q.keys()).await.unwrap().is_empty());
}

#[echomq_testkit::case]
pub(super) async fn group_events_are_written(h: &Harness) {
    let q = h.queue::<Value>("group_events");
    let a = q.admin().group("a").unwrap();
    a.pause().await.unwrap();
    a.resume().await.unwrap();
    a.set_rate_limit(3, Duration::from_secs(1)).await.unwrap();
    a.clear_concurrency_cap().await.unwrap();
    a.counts().await.unwrap();
    let written: Vec<Vec<String>> = events(h, &q).await;
    let expected: Vec<Vec<&str>> = vec![
        vec!["event", "group_paused", "group", "a"],
        vec!["event", "group_resumed", "group", "a"],
        vec![
            "event",
            "group_limit_set",
            "group",
            "a",
            "max",
            "3",
            "per",
            "1000",
        ],
        vec!["event", "group_concurrency_set", "group", "a", "max", "0"],
    ];
    assert_eq!(written, expected);
}

/// Sends `script` with `args` after the base, as the harness's wire does;
/// the refusal's text, once nothing was written (the group keys, the meta
/// hash and the events are as before).
async fn refused_unwritten(h: &Harness, name: &str, script: &str, args: &[&str]) -> String {
    let q = h.queue::<Value>(name);
    put(&q, "g1", Some("g"), 0).await;
    q.admin()
        .group("g")
        .unwrap()
        .set_concurrency_cap(2)
        .await
        .unwrap();
    let before = (group_keys(h, &q).await, events(h, &q).await.len());
    let refused = raw_call(h, &q, script, args)
        .await
        .map(|reply| panic!("{script} {args:?} answered {reply:?}"))
        .unwrap_err();
    let refused = error_text(&refused);
    assert_eq!(
        (group_keys(h, &q).await, events(h, &q).await.len()),
        before,
        "{refused}: nothing written"
    );
    h.check(&q).await;
    refused
}

#[echomq_testkit::case]
pub(super) async fn a_bad_group_is_refused_badarg_group(h: &Harness) {
    let refused = refused_unwritten(h, "bad_group", "enqueue", &["*", "x", "GROUP", "a b"]).await;
    assert_eq!(refused, "BADARG group");
    let long = "g".repeat(129);
    let refused = refused_unwritten(h, "bad_group_long", "group_pause", &[&long]).await;
    assert_eq!(refused, "BADARG group");
    let refused = refused_unwritten(h, "bad_group_braces", "group_counts", &["{}"]).await;
    assert_eq!(refused, "BADARG group");
    let q = h.queue::<Value>("bad_group");
    let err = q
        .enqueue(NewJob::new(json!(1)).group("a b"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::BadArgument { name: "group", .. }),
        "{err:?}"
    );
    assert!(matches!(
        q.admin().group(""),
        Err(Error::BadArgument { name: "group", .. })
    ));
}

#[echomq_testkit::case]
pub(super) async fn group_concurrency_off_with_max_is_refused_syntax(h: &Harness) {
    let args = ["g", "MAX", "2", "OFF"];
    let refused = refused_unwritten(h, "gcap_off_max", "group_concurrency", &args).await;
    assert_eq!(refused, "SYNTAX MAX and OFF exclude each other");
}

#[echomq_testkit::case]
pub(super) async fn group_concurrency_max_zero_is_refused_badarg_max(h: &Harness) {
    let args = ["g", "MAX", "0"];
    let refused = refused_unwritten(h, "gcap_zero", "group_concurrency", &args).await;
    assert_eq!(refused, "BADARG max");
    let group = h.queue::<Value>("gcap_zero").admin().group("g").unwrap();
    let err = group.set_concurrency_cap(0).await.unwrap_err();
    assert_eq!(refusal(err), Refusal::BadArg("max".into()));
}

#[echomq_testkit::case]
pub(super) async fn group_limit_max_without_per_is_refused_badarg_per(h: &Harness) {
    let refused = refused_unwritten(h, "glimit_no_per", "group_limit", &["g", "MAX", "5"]).await;
    assert_eq!(refused, "BADARG per");
}

#[echomq_testkit::case]
pub(super) async fn group_limit_per_without_max_is_refused_badarg_max(h: &Harness) {
    let args = ["g", "PER", "1000"];
    let refused = refused_unwritten(h, "glimit_no_max", "group_limit", &args).await;
    assert_eq!(refused, "BADARG max");
}

#[echomq_testkit::case]
pub(super) async fn group_limit_off_with_max_is_refused_syntax(h: &Harness) {
    let args = ["g", "MAX", "5", "PER", "1000", "OFF"];
    let refused = refused_unwritten(h, "glimit_off_max", "group_limit", &args).await;
    assert_eq!(refused, "SYNTAX MAX and OFF exclude each other");
}

#[echomq_testkit::case]
pub(super) async fn group_pause_with_an_extra_argument_is_refused_syntax(h: &Harness) {
    let refused = refused_unwritten(h, "gpause_extra", "group_pause", &["g", "now"]).await;
    assert_eq!(refused, "SYNTAX unknown option now");
}

#[echomq_testkit::case]
pub(super) async fn groups_after_a_bad_group_is_refused_badarg_after(h: &Harness) {
    let refused = refused_unwritten(h, "groups_after", "groups", &["AFTER", "a b"]).await;
    assert_eq!(refused, "BADARG after");
    let admin = h.queue::<Value>("groups_after").admin();
    let err = admin.groups(Some("a b"), 10).await.unwrap_err();
    assert!(
        matches!(err, Error::BadArgument { name: "after", .. }),
        "{err:?}"
    );
}

#[echomq_testkit::case]
pub(super) async fn groups_count_zero_is_refused_badarg_count(h: &Harness) {
    let refused = refused_unwritten(h, "groups_count", "groups", &["COUNT", "0"]).await;
    assert_eq!(refused, "BADARG count");
}
