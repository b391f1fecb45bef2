//! Every refusal of FLOW.ADD, FLOW.ADD.BULK, FLOW.DEPS and FLOW.DEPENDENTS,
//! each its own case: the arguments are checked before any key is read,
//! ids before any write, and a refused call writes nothing.

use super::cases::flow_add;
use super::common::{Harness, error_text, raw_call, writes};
use echomq::Queue;
use serde_json::{Value as Json, json};

/// `verb` with `args`, refused: its error text; asserts it wrote nothing.
async fn refused(h: &Harness, q: &Queue<Json>, verb: &str, args: &[&str]) -> String {
    let before = writes(h, q).await;
    let err = raw_call(h, q, verb, args)
        .await
        .expect_err("the call is refused");
    assert_eq!(writes(h, q).await, before, "a refused {verb} wrote");
    error_text(&err)
}

/// FLOW.ADD of `args`, refused `wanted`, each of `cases` in turn.
async fn refuses_each(h: &Harness, q: &Queue<Json>, wanted: &str, cases: &[&[&str]]) {
    for args in cases {
        assert_eq!(refused(h, q, "flow_add", args).await, wanted, "{args:?}");
    }
}

#[echomq_testkit::case(cluster)]
pub(super) async fn flow_add_refuses_an_id_of_another_flow_with_conflict(h: &Harness) {
    let q = h.queue::<Json>("flow_conflict");
    flow_add(h, &q, &["f1", "a", "a", "{}", "other x", ""]).await;
    q.enqueue(echomq::NewJob::new(json!(1)).id("plain").unwrap())
        .await
        .unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["f2", "a", "a", "{}", "", ""], "CONFLICT f1"),
        (&["f2", "plain", "plain", "{}", "", ""], "CONFLICT -"),
        (&["-", "plain", "plain", "{}", "", ""], "CONFLICT -"),
    ];
    for (args, wanted) in cases {
        assert_eq!(refused(h, &q, "flow_add", args).await, wanted, "{args:?}");
    }
    // An id only a resolution holds (its job trimmed, its hand-off left)
    // is its flow's.
    let _: () = redis::pipe()
        .cmd("HSET")
        .arg(format!("{}:resolution:r1", q.keys().base()))
        .arg(&["text", "cancelled r1", "flow", "f9", "left", "1"])
        .ignore()
        .cmd("HSET")
        .arg(format!("{}:resolution:r2", q.keys().base()))
        .arg(&["text", "cancelled -", "flow", "", "left", "1"])
        .ignore()
        .cmd("ZADD")
        .arg(format!("{}:resolutions", q.keys().base()))
        .arg(&["1", "r1", "1", "r2"])
        .ignore()
        .cmd("HSET")
        .arg(format!("{}:dependents:r1", q.keys().base()))
        .arg(&["b.q x", "0"])
        .ignore()
        .cmd("HSET")
        .arg(format!("{}:dependents:r2", q.keys().base()))
        .arg(&["b.q x", "0"])
        .ignore()
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    for (id, wanted) in [("r1", "CONFLICT f9"), ("r2", "CONFLICT -")] {
        let args = ["f2", id, id, "{}", "", "b.q x"];
        assert_eq!(refused(h, &q, "flow_add", &args).await, wanted, "{id}");
    }
    // The bulk form checks every id before its first write: the new job
    // before the conflict is not written either.
    let err = refused(
        h,
        &q,
        "flow_add_bulk",
        &[
            "f2", "new", "new", "1", "", "", "0", "3", "fail", "a", "a", "2", "", "", "0", "3",
            "fail",
        ],
    )
    .await;
    assert_eq!(err, "CONFLICT f1");
    assert_eq!(
        q.admin().counts().await.unwrap().total(),
        2,
        "nothing added"
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_add_refuses_dedup_debounce_and_repeat(h: &Harness) {
    let q = h.queue::<Json>("flow_no_dedup");
    for option in [
        &["DEDUP", "k"][..],
        &["DEBOUNCE", "10"],
        &["REPEAT", "k"],
        &["WAITED"],
    ] {
        let mut args = vec!["f", "a", "a", "{}", "", ""];
        args.extend_from_slice(option);
        let err = refused(h, &q, "flow_add", &args).await;
        assert!(
            err.starts_with("SYNTAX unknown option"),
            "{option:?}: {err}"
        );
    }
    let both = [
        "f",
        "a",
        "a",
        "{}",
        "",
        "",
        "START_BY",
        "99999999999999",
        "START_WITHIN",
        "5",
    ];
    assert!(
        refused(h, &q, "flow_add", &both)
            .await
            .starts_with("SYNTAX")
    );
}

#[echomq_testkit::case]
pub(super) async fn flow_add_refuses_a_bad_flow_id_with_badarg_flow(h: &Harness) {
    let q = h.queue::<Json>("flow_bad_flow");
    let long = "f".repeat(128);
    refuses_each(
        h,
        &q,
        "BADARG flow",
        &[
            &["", "a", "a", "{}", "", ""],
            &[&long, "a", "a", "{}", "", ""],
            &["a b", "a", "a", "{}", "", ""],
            &[],
        ],
    )
    .await;
    // 127 bytes is a flow id.
    let longest = "f".repeat(127);
    assert_eq!(
        flow_add(h, &q, &[&longest, "a", "a", "{}", "", ""]).await[0].1,
        1
    );
}

#[echomq_testkit::case]
pub(super) async fn flow_add_refuses_a_bad_ref_with_badarg_ref(h: &Harness) {
    let q = h.queue::<Json>("flow_bad_ref");
    let long = "r".repeat(129);
    refuses_each(
        h,
        &q,
        "BADARG ref",
        &[
            &["f", "a", "", "{}", "", ""],
            &["f", "a", &long, "{}", "", ""],
            &["f", "a", "r{1}", "{}", "", ""],
            &["f", "a"],
        ],
    )
    .await;
}

#[echomq_testkit::case]
pub(super) async fn flow_add_refuses_a_generated_or_bad_id_with_badarg_id(h: &Harness) {
    let q = h.queue::<Json>("flow_bad_id");
    refuses_each(
        h,
        &q,
        "BADARG id",
        &[
            &["f", "*", "a", "{}", "", ""],
            &["f", "a b", "a", "{}", "", ""],
            &["f"],
        ],
    )
    .await;
}

#[echomq_testkit::case]
pub(super) async fn flow_add_refuses_a_bad_dependency_list_with_badarg_after(h: &Harness) {
    let q = h.queue::<Json>("flow_bad_after");
    let too_many: Vec<String> = (0..=echomq::protocol::arg::FLOW_EDGES_MAX)
        .map(|n| format!("q j{n}"))
        .collect();
    let too_many = too_many.join(" ");
    refuses_each(
        h,
        &q,
        "BADARG after",
        &[
            &["f", "a", "a", "{}", "q", ""],
            &["f", "a", "a", "{}", "q x y", ""],
            &["f", "a", "a", "{}", " q x", ""],
            &["f", "a", "a", "{}", "q x ", ""],
            &["f", "a", "a", "{}", "q  x", ""],
            &["f", "a", "a", "{}", "q *", ""],
            &["f", "a", "a", "{}", "q x q x", ""],
            &["f", "a", "a", "{}", "bad/queue x", ""],
            &["f", "a", "a", "{}", "q x{", ""],
            &["f", "a", "a", "{}", "flow_bad_after a", ""],
            &["f", "a", "a", "{}", &too_many, ""],
            &["f", "a", "a", "{}"],
        ],
    )
    .await;
}

#[echomq_testkit::case]
pub(super) async fn flow_add_refuses_a_bad_dependent_list_with_badarg_before(h: &Harness) {
    let q = h.queue::<Json>("flow_bad_before");
    refuses_each(
        h,
        &q,
        "BADARG before",
        &[
            &["f", "a", "a", "{}", "", "q"],
            &["f", "a", "a", "{}", "", "q x q x"],
            &["f", "a", "a", "{}", "", "flow_bad_before a"],
            &["f", "a", "a", "{}", "q x"],
        ],
    )
    .await;
}

#[echomq_testkit::case]
pub(super) async fn flow_add_refuses_an_unknown_policy_with_badarg_on_failure(h: &Harness) {
    let q = h.queue::<Json>("flow_bad_policy");
    refuses_each(
        h,
        &q,
        "BADARG on_failure",
        &[
            &["f", "a", "a", "{}", "", "", "ON_FAILURE", "Fail"],
            &["f", "a", "a", "{}", "", "", "ON_FAILURE", "retry"],
            &["f", "a", "a", "{}", "", "", "ON_FAILURE"],
        ],
    )
    .await;
    let bulk = refused(
        h,
        &q,
        "flow_add_bulk",
        &["f", "a", "a", "{}", "", "", "0", "3", "never"],
    )
    .await;
    assert_eq!(bulk, "BADARG on_failure");
}

#[echomq_testkit::case]
pub(super) async fn flow_add_refuses_a_bad_run_at_with_badarg_run_at(h: &Harness) {
    let q = h.queue::<Json>("flow_bad_run_at");
    refuses_each(
        h,
        &q,
        "BADARG run_at",
        &[
            &["f", "a", "a", "{}", "", "", "RUN_AT", "+x"],
            &["f", "a", "a", "{}", "", "", "RUN_AT", "-1"],
            &["f", "a", "a", "{}", "", "", "RUN_AT", "9007199254740992"],
            &["f", "a", "a", "{}", "", "", "RUN_AT"],
        ],
    )
    .await;
    // A deadline not later than a future run-at is refused as SCHEDULE's is.
    let late = [
        "f",
        "a",
        "a",
        "{}",
        "",
        "",
        "RUN_AT",
        "+3600000",
        "START_WITHIN",
        "1000",
    ];
    assert_eq!(
        refused(h, &q, "flow_add", &late).await,
        "BADARG start_within"
    );
}

#[echomq_testkit::case]
pub(super) async fn flow_add_refuses_a_missing_payload_with_badarg_payload(h: &Harness) {
    let q = h.queue::<Json>("flow_bad_payload");
    refuses_each(h, &q, "BADARG payload", &[&["f", "a", "a"]]).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_add_bulk_refuses_groups_not_whole_with_badarg_jobs(h: &Harness) {
    let q = h.queue::<Json>("flow_bad_jobs");
    for args in [
        &["f"][..],
        &["f", "a", "a", "{}", "", "", "0", "3"],
        &["f", "a", "a", "{}", "", "", "0", "3", "fail", "b"],
    ] {
        assert_eq!(
            refused(h, &q, "flow_add_bulk", args).await,
            "BADARG jobs",
            "{args:?}"
        );
    }
}

#[echomq_testkit::case]
pub(super) async fn flow_add_refuses_a_key_of_the_wrong_type_and_writes_nothing(h: &Harness) {
    let q = h.queue::<Json>("flow_wrongtype");
    // Each key a new job of the flow may write, in turn the one of the
    // wrong type: its hash, its resolution, its deps and dependents.
    let cases: [(&str, &[&str]); 4] = [
        ("job:a", &["f", "a", "a", "{}", "q x", ""]),
        ("resolution:a", &["f", "a", "a", "{}", "q x", ""]),
        ("deps:a", &["f", "a", "a", "{}", "q x", ""]),
        ("dependents:a", &["f", "a", "a", "{}", "", "q x"]),
    ];
    let mut con = h.raw(&q).await;
    for (key, args) in cases {
        let key = format!("{}:{key}", q.keys().base());
        let _: () = redis::cmd("SET")
            .arg(&key)
            .arg("x")
            .query_async(&mut con)
            .await
            .unwrap();
        let err = refused(h, &q, "flow_add", args).await;
        assert!(err.starts_with("WRONGTYPE"), "{key}: {err}");
        let _: () = redis::cmd("DEL")
            .arg(&key)
            .query_async(&mut con)
            .await
            .unwrap();
    }
    assert_eq!(q.admin().counts().await.unwrap().total(), 0);
}

#[echomq_testkit::case]
pub(super) async fn flow_deps_and_dependents_refuse_an_absent_job_and_bad_pages(h: &Harness) {
    let q = h.queue::<Json>("flow_bad_page");
    flow_add(h, &q, &["f", "a", "a", "{}", "q x", ""]).await;
    for verb in ["flow_deps", "flow_dependents"] {
        assert_eq!(refused(h, &q, verb, &["absent"]).await, "NOJOB");
        assert_eq!(
            refused(h, &q, verb, &["a", "CURSOR", "-1"]).await,
            "BADARG cursor"
        );
        assert_eq!(
            refused(h, &q, verb, &["a", "COUNT", "0"]).await,
            "BADARG count"
        );
        assert_eq!(refused(h, &q, verb, &["*"]).await, "BADARG id");
        assert!(
            refused(h, &q, verb, &["a", "MATCH", "x"])
                .await
                .starts_with("SYNTAX")
        );
    }
}

#[echomq_testkit::case]
pub(super) async fn the_invariant_finds_a_flow_job_that_breaks_the_flow_rules(h: &Harness) {
    let q = h.queue::<Json>("flow_broken");
    // Edge hashes on a queue without the flows mark.
    let _: () = redis::cmd("HSET")
        .arg(format!("{}:deps:ghost", q.keys().base()))
        .arg(&["q x", "wait"])
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let problems = echomq_testkit::invariant::check_invariant(h.urls(), q.keys())
        .await
        .unwrap_err();
    assert!(problems.contains("has no flows mark"), "{problems}");
    assert!(problems.contains("belongs to no job"), "{problems}");

    let q = h.queue::<Json>("flow_broken_counts");
    flow_add(h, &q, &["f", "a", "a", "{}", "q x q y", "q z"]).await;
    h.check(&q).await;
    let _: () = redis::pipe()
        .cmd("HSET")
        .arg(format!("{}:deps:a", q.keys().base()))
        .arg(&["q x", "completed x 0 "])
        .ignore()
        .cmd("HSET")
        .arg(format!("{}:dependents:a", q.keys().base()))
        .arg(&["q w", "2"])
        .ignore()
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let problems = echomq_testkit::invariant::check_invariant(h.urls(), q.keys())
        .await
        .unwrap_err();
    assert!(
        problems.contains("deps_left Some(2), its deps hash 2 fields, 1 wait"),
        "{problems}"
    );
    assert!(
        problems.contains("has dependents 1, its dependents hash 2 fields"),
        "{problems}"
    );
    assert!(problems.contains("neither 0 nor 1"), "{problems}");
    let _: () = redis::cmd("HSET")
        .arg(q.keys().job(&echomq::JobId::new("a").unwrap()))
        .arg(&["deps_left", "0"])
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let problems = echomq_testkit::invariant::check_invariant(h.urls(), q.keys())
        .await
        .unwrap_err();
    assert!(
        problems.contains("is blocked with deps_left Some(0)"),
        "{problems}"
    );
}
