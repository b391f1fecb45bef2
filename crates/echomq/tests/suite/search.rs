//! `Jobs::search`: by id prefix, payload text and error text; a cursor
//! walked to its end meets every match once; a budget stops a walk early;
//! bad input is refused before anything is sent; a pending walk reads
//! `fifo` then `pending`, and keeps its place in `fifo` while jobs leave
//! it. Every case runs on a server (wire 4), again on wire 6 and on a
//! cluster.

use crate::common;

/// Every case again, on one 3-master cluster.
#[tokio::test]
async fn search_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}

mod cases {
    use super::common::{Harness, claimed_ids};
    use echomq::{Error, FailAction, JobMatch, JobState, NewJob, Queue, SearchPage};
    use serde_json::{Value, json};
    use std::collections::BTreeSet;
    use std::time::Duration;

    const LEASE: Duration = Duration::from_secs(30);
    /// More than a listpack holds (128), so ZSCAN really walks in steps.
    const MANY: u64 = 300;

    /// `n` pending jobs `j0`…; every third one's payload holds `needle`.
    async fn many(q: &Queue<Value>, n: u64) {
        let jobs: Vec<NewJob<Value>> = (0..n)
            .map(|k| {
                let text = if k % 3 == 0 { "has a needle" } else { "hay" };
                NewJob::new(json!({ "k": k, "text": text }))
                    .id(format!("j{k}"))
                    .unwrap()
            })
            .collect();
        q.enqueue_bulk(jobs).await.unwrap();
    }

    /// Every match of `matching` in `state`, walking the cursor to 0 in
    /// pages of `want`; checks no id comes twice.
    async fn walk(
        q: &Queue<Value>,
        state: JobState,
        matching: &JobMatch,
        want: usize,
    ) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut cursor = 0;
        let mut pages = 0;
        loop {
            let page: SearchPage = q
                .jobs()
                .search(state, matching, cursor, want, 10_000)
                .await
                .unwrap();
            for job in page.jobs {
                assert_eq!(job.state, state);
                assert!(
                    seen.insert(job.id.as_str().to_string()),
                    "{} met twice",
                    job.id
                );
            }
            pages += 1;
            assert!(pages < 1000, "the walk never ends");
            if page.cursor == 0 {
                return seen;
            }
            cursor = page.cursor;
        }
    }

    fn ids(page: &SearchPage) -> BTreeSet<String> {
        page.jobs
            .iter()
            .map(|j| j.id.as_str().to_string())
            .collect()
    }

    fn set(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    /// Job `id` dead with `error`.
    async fn dead(q: &Queue<Value>, id: &str, error: &str) {
        q.enqueue(
            NewJob::new(json!({ "dead": id }))
                .id(id)
                .unwrap()
                .attempts(1),
        )
        .await
        .unwrap();
        let claimed = q.claim_one("w", LEASE).await.unwrap().unwrap();
        assert_eq!(claimed.id.as_str(), id);
        q.fail(&claimed.id, claimed.token, error, FailAction::Dead)
            .await
            .unwrap();
    }

    #[echomq_testkit::case(cluster)]
    pub(super) async fn each_kind_of_match_finds_its_jobs(h: &Harness) {
        let q = h.queue::<Value>("search_kinds");
        dead(&q, "d1", "timeout talking to smtp").await;
        dead(&q, "d2", "bad address").await;
        dead(&q, "d3", "Timeout upstream").await;
        for (id, to) in [("a1", "ada"), ("a2", "bob"), ("b1", "ada lovelace")] {
            q.enqueue(NewJob::new(json!({ "to": to })).id(id).unwrap())
                .await
                .unwrap();
        }
        let jobs = q.jobs();
        let page = jobs
            .search(
                JobState::Pending,
                &JobMatch::IdPrefix("a".into()),
                0,
                50,
                1000,
            )
            .await
            .unwrap();
        assert_eq!(ids(&page), set(&["a1", "a2"]));
        assert_eq!(page.cursor, 0);
        let page = jobs
            .search(
                JobState::Pending,
                &JobMatch::Payload("ada".into()),
                0,
                50,
                1000,
            )
            .await
            .unwrap();
        assert_eq!(ids(&page), set(&["a1", "b1"]));
        assert_eq!(page.scanned, 3);
        assert!(page.jobs[0].payload.contains("ada"));
        // Case-sensitive: "timeout" is not "Timeout".
        let page = jobs
            .search(
                JobState::Dead,
                &JobMatch::Error("timeout".into()),
                0,
                50,
                1000,
            )
            .await
            .unwrap();
        assert_eq!(ids(&page), set(&["d1"]));
        assert_eq!(
            page.jobs[0].error.as_deref(),
            Some("timeout talking to smtp")
        );
        // The state is the one asked for: no dead job is pending.
        let page = jobs
            .search(
                JobState::Pending,
                &JobMatch::IdPrefix("d".into()),
                0,
                50,
                1000,
            )
            .await
            .unwrap();
        assert!(page.jobs.is_empty());
        // Pending jobs have no error.
        let page = jobs
            .search(JobState::Pending, &JobMatch::Error("a".into()), 0, 50, 1000)
            .await
            .unwrap();
        assert!(page.jobs.is_empty());
    }

    #[echomq_testkit::case(cluster)]
    pub(super) async fn an_id_prefix_with_glob_characters_matches_them_literally(h: &Harness) {
        let q = h.queue::<Value>("search_glob");
        for id in ["a?1", "ab1", "a*x", "a[b]"] {
            q.enqueue(NewJob::new(json!(id)).id(id).unwrap())
                .await
                .unwrap();
        }
        let jobs = q.jobs();
        let page = jobs
            .search(
                JobState::Pending,
                &JobMatch::IdPrefix("a?".into()),
                0,
                50,
                1000,
            )
            .await
            .unwrap();
        let found = ids(&page);
        assert!(!found.contains("ab1"), "? matched as a glob: {found:?}");
        assert_eq!(found, set(&["a?1"]));
        let page = jobs
            .search(
                JobState::Pending,
                &JobMatch::IdPrefix("a*".into()),
                0,
                50,
                1000,
            )
            .await
            .unwrap();
        assert_eq!(ids(&page), set(&["a*x"]), "* matched as a glob");
    }

    #[echomq_testkit::case(cluster)]
    pub(super) async fn a_cursor_walked_to_the_end_finds_every_match_exactly_once(h: &Harness) {
        let q = h.queue::<Value>("search_walk");
        many(&q, MANY).await;
        let expected: BTreeSet<String> = (0..MANY)
            .filter(|k| k % 3 == 0)
            .map(|k| format!("j{k}"))
            .collect();
        let found = walk(
            &q,
            JobState::Pending,
            &JobMatch::Payload("needle".into()),
            7,
        )
        .await;
        assert_eq!(found, expected);
    }

    #[echomq_testkit::case(cluster)]
    pub(super) async fn an_id_prefix_walked_to_the_end_finds_every_match_exactly_once(h: &Harness) {
        let q = h.queue::<Value>("search_prefix_walk");
        many(&q, MANY).await;
        // j1, j10–j19, j100–j199.
        let expected: BTreeSet<String> = (0..MANY)
            .map(|k| format!("j{k}"))
            .filter(|id| id.starts_with("j1"))
            .collect();
        assert_eq!(expected.len(), 111);
        let found = walk(&q, JobState::Pending, &JobMatch::IdPrefix("j1".into()), 5).await;
        assert_eq!(found, expected);
    }

    #[echomq_testkit::case(cluster)]
    pub(super) async fn all_walked_to_the_end_finds_every_job_exactly_once(h: &Harness) {
        let q = h.queue::<Value>("search_all");
        many(&q, MANY).await;
        let expected: BTreeSet<String> = (0..MANY).map(|k| format!("j{k}")).collect();
        let found = walk(&q, JobState::Pending, &JobMatch::All, 50).await;
        assert_eq!(found, expected);
    }

    #[echomq_testkit::case(cluster)]
    pub(super) async fn a_budget_stops_a_search_early_with_a_cursor_to_continue(h: &Harness) {
        let q = h.queue::<Value>("search_budget");
        many(&q, MANY).await;
        let matching = JobMatch::Payload("not in any payload".into());
        let page = q
            .jobs()
            .search(JobState::Pending, &matching, 0, 50, 40)
            .await
            .unwrap();
        assert!(page.jobs.is_empty());
        assert_ne!(page.cursor, 0, "the walk is not done after 40 of {MANY}");
        assert!(
            page.scanned >= 1 && page.scanned < MANY,
            "scanned {}",
            page.scanned
        );
        // The same search with a budget larger than the set is done.
        let page = q
            .jobs()
            .search(JobState::Pending, &matching, 0, 50, 10 * MANY)
            .await
            .unwrap();
        assert_eq!(page.cursor, 0);
        assert!(page.scanned >= MANY, "scanned {}", page.scanned);
    }

    #[echomq_testkit::case(cluster)]
    pub(super) async fn an_empty_text_is_a_bad_argument_naming_it(h: &Harness) {
        let q = h.queue::<Value>("search_empty");
        many(&q, 3).await;
        for (matching, name) in [
            (JobMatch::IdPrefix(String::new()), "id prefix"),
            (JobMatch::Payload(String::new()), "payload text"),
            (JobMatch::Error(String::new()), "error text"),
        ] {
            let err = q
                .jobs()
                .search(JobState::Pending, &matching, 0, 50, 1000)
                .await
                .unwrap_err();
            match err {
                Error::BadArgument { name: got, .. } => assert_eq!(got, name),
                other => panic!("expected BadArgument {name}, got {other:?}"),
            }
        }
    }

    #[echomq_testkit::case(cluster)]
    pub(super) async fn a_want_or_budget_of_0_is_a_bad_argument(h: &Harness) {
        let q = h.queue::<Value>("search_zero");
        let matching = JobMatch::Payload("x".into());
        let err = q
            .jobs()
            .search(JobState::Pending, &matching, 0, 0, 1000)
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::BadArgument { name: "want", .. }),
            "{err:?}"
        );
        let err = q
            .jobs()
            .search(JobState::Pending, &matching, 0, 10, 0)
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::BadArgument { name: "budget", .. }),
            "{err:?}"
        );
    }

    #[echomq_testkit::case(cluster)]
    pub(super) async fn a_pending_search_finds_jobs_in_fifo_and_in_pending(h: &Harness) {
        let q = h.queue::<Value>("search_fifo");
        for (id, to, priority) in [("f1", "ada", 0), ("p1", "ada", 4), ("f2", "bob", 0)] {
            q.enqueue(
                NewJob::new(json!({ "to": to }))
                    .id(id)
                    .unwrap()
                    .priority(priority),
            )
            .await
            .unwrap();
        }
        q.enqueue(
            NewJob::new(json!({ "to": "bob" }))
                .id("p2")
                .unwrap()
                .priority(4),
        )
        .await
        .unwrap();
        assert_eq!(h.fifo_and_pending(&q).await, (2, 2));
        let jobs = q.jobs();
        let search = |matching: JobMatch| {
            let jobs = &jobs;
            async move {
                jobs.search(JobState::Pending, &matching, 0, 50, 1000)
                    .await
                    .unwrap()
            }
        };
        let page = search(JobMatch::IdPrefix("f".into())).await;
        assert_eq!((ids(&page), page.cursor), (set(&["f1", "f2"]), 0));
        let page = search(JobMatch::IdPrefix("p".into())).await;
        assert_eq!((ids(&page), page.cursor), (set(&["p1", "p2"]), 0));
        let page = search(JobMatch::Payload("ada".into())).await;
        assert_eq!(ids(&page), set(&["f1", "p1"]));
        assert_eq!(page.scanned, 4);
        // fifo first, in claim order, then pending.
        let page = search(JobMatch::All).await;
        let order: Vec<&str> = page.jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(order[..2], ["f1", "f2"]);
        assert_eq!(ids(&page), set(&["f1", "f2", "p1", "p2"]));
        // One entry per call: a cursor into fifo, then pending's.
        let mut cursor = 0;
        let mut met = Vec::new();
        loop {
            let page = jobs
                .search(JobState::Pending, &JobMatch::All, cursor, 10, 1)
                .await
                .unwrap();
            met.extend(page.jobs.iter().map(|j| j.id.as_str().to_string()));
            if page.cursor == 0 {
                break;
            }
            assert!(met.len() <= 4, "the walk never ends: {met:?}");
            cursor = page.cursor;
        }
        assert_eq!(met[..2], ["f1", "f2"]);
        assert_eq!(met.iter().cloned().collect::<BTreeSet<_>>(), ids(&page));
        assert_eq!(met.len(), 4, "{met:?}");
    }

    /// `n` pending jobs `j0`… of priority 0 (in `fifo`), then `r0` and `r1`
    /// of priority 2 (in `pending`).
    async fn fifo_then_ranked(h: &Harness, q: &Queue<Value>, n: u64) {
        let jobs = (0..n).map(|k| NewJob::new(json!(k)).id(format!("j{k}")).unwrap());
        q.enqueue_bulk(jobs.collect::<Vec<_>>()).await.unwrap();
        for r in ["r0", "r1"] {
            q.enqueue(NewJob::new(json!(r)).id(r).unwrap().priority(2))
                .await
                .unwrap();
        }
        assert_eq!(h.fifo_and_pending(q).await, (n, 2));
    }

    /// `j<from>`…`j<to - 1>`.
    fn run(from: u64, to: u64) -> Vec<String> {
        (from..to).map(|k| format!("j{k}")).collect()
    }

    #[echomq_testkit::case(cluster)]
    pub(super) async fn a_walk_that_cancels_what_it_finds_meets_every_pending_job(h: &Harness) {
        // What a bulk verb on everything does: each job found leaves the
        // state before the walk goes on, so fifo's jobs move up under the
        // cursor.
        let q = h.queue::<Value>("search_cancel_all");
        fifo_then_ranked(h, &q, MANY).await;
        let mut cancelled = BTreeSet::new();
        let mut cursor = 0;
        for _ in 0..100 {
            let page = q
                .jobs()
                .search(JobState::Pending, &JobMatch::All, cursor, 50, 50)
                .await
                .unwrap();
            for job in &page.jobs {
                q.jobs().cancel(&job.id).await.unwrap();
                assert!(
                    cancelled.insert(job.id.as_str().to_string()),
                    "{} met twice",
                    job.id
                );
            }
            if page.cursor == 0 {
                break;
            }
            cursor = page.cursor;
        }
        assert_eq!(cancelled.len() as u64, MANY + 2);
        assert_eq!(h.fifo_and_pending(&q).await, (0, 0));
        assert_eq!(q.admin().counts().await.unwrap().cancelled, MANY + 2);
        h.check(&q).await;
    }

    #[echomq_testkit::case(cluster)]
    pub(super) async fn a_pending_walk_keeps_its_place_when_claims_take_the_head_of_fifo(
        h: &Harness,
    ) {
        let q = h.queue::<Value>("search_claimed_under");
        fifo_then_ranked(h, &q, MANY).await;
        let step = |cursor: u64| {
            let q = &q;
            async move {
                let page = q
                    .jobs()
                    .search(JobState::Pending, &JobMatch::All, cursor, 100, 100)
                    .await
                    .unwrap();
                let met: Vec<String> = page
                    .jobs
                    .iter()
                    .map(|j| j.id.as_str().to_string())
                    .collect();
                (met, page.cursor)
            }
        };
        let (met, cursor) = step(0).await;
        assert_eq!(met, run(0, 100));
        // Claims take j0–j29: the next job, j100, moved up 30 places.
        assert_eq!(claimed_ids(&q, 30).await, run(0, 30));
        let (met, cursor) = step(cursor).await;
        assert_eq!(met, run(100, 200));
        // Claims take j30–j209, the next job, j200, among them: the walk
        // starts over from fifo's head, where every job is new to it, and
        // goes on into pending.
        assert_eq!(claimed_ids(&q, 180).await, run(30, 210));
        let (met, cursor) = step(cursor).await;
        let mut expected = run(210, MANY);
        expected.extend(["r0".to_string(), "r1".to_string()]);
        assert_eq!(met, expected);
        assert_eq!(cursor, 0);
        h.check(&q).await;
    }

    #[echomq_testkit::case(cluster)]
    pub(super) async fn a_search_of_an_empty_state_is_done_at_once(h: &Harness) {
        let q = h.queue::<Value>("search_nothing");
        let page = q
            .jobs()
            .search(JobState::Dead, &JobMatch::Error("x".into()), 0, 10, 1000)
            .await
            .unwrap();
        assert!(page.jobs.is_empty());
        assert_eq!(page.cursor, 0);
    }
}
