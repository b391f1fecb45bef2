//! `Jobs::search`: by id prefix, payload text and error text; a cursor
//! walked to its end meets every match once; a budget stops a walk early;
//! bad input is refused before anything is sent. Every case runs on a
//! server (wire 4), again on wire 6 and on a cluster.

#[macro_use]
mod common;

suite!(
    search_suite_on_cluster, search_suite_on_wire_6:
    each_kind_of_match_finds_its_jobs,
    an_id_prefix_with_glob_characters_matches_them_literally,
    a_cursor_walked_to_the_end_finds_every_match_exactly_once,
    an_id_prefix_walked_to_the_end_finds_every_match_exactly_once,
    a_budget_stops_a_search_early_with_a_cursor_to_continue,
    an_empty_text_is_a_bad_argument_naming_it,
    all_walked_to_the_end_finds_every_job_exactly_once,
    a_want_or_budget_of_0_is_a_bad_argument,
    a_search_of_an_empty_state_is_done_at_once,
);

mod cases {
    use super::common::Harness;
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

    pub async fn each_kind_of_match_finds_its_jobs(h: &Harness) {
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

    pub async fn an_id_prefix_with_glob_characters_matches_them_literally(h: &Harness) {
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

    pub async fn a_cursor_walked_to_the_end_finds_every_match_exactly_once(h: &Harness) {
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

    pub async fn an_id_prefix_walked_to_the_end_finds_every_match_exactly_once(h: &Harness) {
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

    pub async fn all_walked_to_the_end_finds_every_job_exactly_once(h: &Harness) {
        let q = h.queue::<Value>("search_all");
        many(&q, MANY).await;
        let expected: BTreeSet<String> = (0..MANY).map(|k| format!("j{k}")).collect();
        let found = walk(&q, JobState::Pending, &JobMatch::All, 50).await;
        assert_eq!(found, expected);
    }

    pub async fn a_budget_stops_a_search_early_with_a_cursor_to_continue(h: &Harness) {
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

    pub async fn an_empty_text_is_a_bad_argument_naming_it(h: &Harness) {
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

    pub async fn a_want_or_budget_of_0_is_a_bad_argument(h: &Harness) {
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

    pub async fn a_search_of_an_empty_state_is_done_at_once(h: &Harness) {
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
