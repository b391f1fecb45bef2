//! The registry of queues (`<prefix>:queues`): a queue joins it once a
//! transition of it succeeded, never on a refused one. Discovery lists it
//! with the queues a walk of the keyspace finds (made without the client),
//! and names a member that is not a queue name. Every case runs on a
//! server (wire 4) and again on wire 6 (the module's `EMQ.*`); the walk
//! also on a cluster.

use crate::common;

#[tokio::test]
async fn queues_outside_the_registry_are_found_on_every_primary_of_a_cluster() {
    let h = common::Harness::cluster().await;
    let names: Vec<String> = (0..12).map(|n| format!("walked_{n}")).collect();
    for name in &names {
        let q = h.queue::<serde_json::Value>(name);
        q.enqueue(serde_json::json!(1)).await.unwrap();
    }
    let registry = echomq::protocol::Keyspace::registry(h.connector.prefix()).unwrap();
    let mut held_by = std::collections::BTreeSet::new();
    for url in h.urls() {
        let client = redis::Client::open(url.as_str()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let _: redis::RedisResult<()> = redis::cmd("DEL")
            .arg(&registry)
            .query_async(&mut conn)
            .await;
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("emq:{walked_*}:meta")
            .query_async(&mut conn)
            .await
            .unwrap();
        if !keys.is_empty() {
            held_by.insert(url.clone());
        }
    }
    assert!(held_by.len() > 1, "the queues span primaries: {held_by:?}");
    let mut want = names.clone();
    want.sort();
    assert_eq!(h.connector.queues().await.unwrap(), want);
}

mod cases {
    use super::common::Harness;
    use echomq::acl::{self, Reach, Role};
    use echomq::protocol::Keyspace;
    use echomq::{Problem, Wire};
    use redis::aio::MultiplexedConnection;
    use serde_json::{Value, json};
    use std::sync::{Arc, Mutex};

    /// `SET key <a string>` over `conn`: a key of the wrong type.
    async fn clobber(conn: &mut MultiplexedConnection, key: &str) {
        let _: () = redis::cmd("SET")
            .arg(key)
            .arg("not of its type")
            .query_async(conn)
            .await
            .unwrap();
    }

    /// `DEL key` over `conn`.
    async fn delete(conn: &mut MultiplexedConnection, key: &str) {
        let _: () = redis::cmd("DEL").arg(key).query_async(conn).await.unwrap();
    }

    #[echomq_testkit::case]
    pub(super) async fn a_refused_enqueue_leaves_the_queue_out_of_the_registry(h: &Harness) {
        let q = h.queue::<Value>("refused_enqueue");
        let mut conn = h.raw(&q).await;
        clobber(&mut conn, &q.keys().pending()).await;
        let err = q.enqueue(json!(1)).await.unwrap_err();
        assert!(err.to_string().contains("WRONGTYPE"), "{err}");
        assert_eq!(h.connector.queues().await.unwrap(), Vec::<String>::new());

        delete(&mut conn, &q.keys().pending()).await;
        q.enqueue(json!(1)).await.unwrap();
        assert_eq!(h.connector.queues().await.unwrap(), ["refused_enqueue"]);
    }

    #[echomq_testkit::case]
    pub(super) async fn a_refused_bulk_enqueue_leaves_the_queue_out_of_the_registry(h: &Harness) {
        let q = h.queue::<Value>("refused_bulk");
        clobber(&mut h.raw(&q).await, &q.keys().pending()).await;
        let err = q.enqueue_bulk([json!(1), json!(2)]).await.unwrap_err();
        assert!(err.to_string().contains("WRONGTYPE"), "{err}");
        assert_eq!(h.connector.queues().await.unwrap(), Vec::<String>::new());
    }

    #[echomq_testkit::case]
    pub(super) async fn an_enqueue_whose_registry_write_fails_succeeds_and_the_next_one_registers(
        h: &Harness,
    ) {
        let warnings = Warnings::default();
        let _guard = warnings.capture();
        let q = h.queue::<Value>("unregistered");
        let registry = Keyspace::registry(h.connector.prefix()).unwrap();
        let mut conn = h.raw(&q).await;
        clobber(&mut conn, &registry).await;
        let job = q.enqueue(json!(1)).await.unwrap();
        assert!(job.created);
        let logged = warnings.0.lock().unwrap().clone();
        assert_eq!(logged.len(), 1, "{logged:?}");
        assert!(logged[0].contains("unregistered"), "{logged:?}");
        assert!(logged[0].contains("WRONGTYPE"), "{logged:?}");

        delete(&mut conn, &registry).await;
        q.enqueue(json!(2)).await.unwrap();
        assert_eq!(h.connector.queues().await.unwrap(), ["unregistered"]);
        assert_eq!(q.admin().counts().await.unwrap().pending, 2);
    }

    /// `SREM <registry> <queue>` over `conn`: the keyspace of a queue made
    /// without the client, as a raw `FCALL` of the library leaves it.
    async fn unregister(h: &Harness, conn: &mut MultiplexedConnection, queue: &str) {
        let registry = Keyspace::registry(h.connector.prefix()).unwrap();
        let _: () = redis::cmd("SREM")
            .arg(registry)
            .arg(queue)
            .query_async(conn)
            .await
            .unwrap();
    }

    #[echomq_testkit::case]
    pub(super) async fn a_queue_outside_the_registry_is_listed_until_obliterated(h: &Harness) {
        let q = h.queue::<Value>("outside");
        let mut conn = h.raw(&q).await;
        match h.connector.wire() {
            Wire::Native => {
                let _: redis::Value = redis::cmd("EMQ.ENQUEUE")
                    .arg(q.keys().base())
                    .arg("j")
                    .arg("{}")
                    .query_async(&mut conn)
                    .await
                    .unwrap();
            }
            Wire::Script => {
                q.enqueue(json!(1)).await.unwrap();
                unregister(h, &mut conn, "outside").await;
            }
        }
        h.queue::<Value>("inside").enqueue(json!(1)).await.unwrap();
        assert_eq!(h.connector.queues().await.unwrap(), ["inside", "outside"]);
        assert_eq!(q.admin().counts().await.unwrap().pending, 1);

        // The walk is kept, but a queue gone since leaves the listing.
        q.admin().pause().await.unwrap();
        q.admin()
            .obliterate(echomq::IfActive::Refuse)
            .await
            .unwrap();
        assert_eq!(h.connector.queues().await.unwrap(), ["inside"]);
    }

    #[echomq_testkit::case]
    pub(super) async fn a_registry_member_that_is_not_a_queue_name_is_named_and_the_rest_read(
        h: &Harness,
    ) {
        let q = h.queue::<Value>("named");
        q.enqueue(json!(1)).await.unwrap();
        let registry = Keyspace::registry(h.connector.prefix()).unwrap();
        let mut conn = h.raw(&q).await;
        for member in [b"bad name".as_slice(), b"x\xff".as_slice()] {
            let _: () = redis::cmd("SADD")
                .arg(&registry)
                .arg(member)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
        assert_eq!(h.connector.queues().await.unwrap(), ["named"]);
        let listed = h
            .connector
            .read_queues(
                |name| async move { h.queue::<Value>(name.as_str()).admin().counts().await },
            )
            .await
            .unwrap();
        assert_eq!(listed.len(), 3, "{listed:?}");
        // In name order: `bad name`, `named`, `x\xff`.
        assert_eq!(listed[1].as_ref().unwrap().pending, 1, "{listed:?}");
        let bad = |at: usize| listed[at].as_ref().unwrap_err().clone();
        assert_eq!(bad(0).queue, "bad name");
        assert_eq!(
            bad(0).problem.to_string(),
            "emq:queues holds a member that is not a queue name: queue name \"bad name\" holds ' '; only A-Z a-z 0-9 _ . : - are allowed"
        );
        assert_eq!(bad(2).queue, r"x\xff");
        assert_eq!(
            bad(2).problem,
            Problem::NotAQueueName {
                registry,
                reason: "its bytes are not UTF-8".into()
            }
        );
    }

    #[echomq_testkit::case]
    pub(super) async fn a_user_the_acl_denies_scan_lists_the_registry(h: &Harness) {
        let rules = acl::rules("emq", &Reach::Prefix, Role::Operator, h.connector.wire()).unwrap();
        assert!(!rules.contains("+scan"), "{rules}");
        let operator = h.as_user("lister", &rules, "emq").await;
        h.queue::<Value>("registered")
            .enqueue(json!(1))
            .await
            .unwrap();
        let q = h.queue::<Value>("unregistered_too");
        q.enqueue(json!(1)).await.unwrap();
        unregister(h, &mut h.raw(&q).await, "unregistered_too").await;
        assert_eq!(operator.queues().await.unwrap(), ["registered"]);
        assert_eq!(
            h.connector.queues().await.unwrap(),
            ["registered", "unregistered_too"]
        );
    }

    /// Every `WARN` event logged on this thread while captured, as text.
    #[derive(Clone, Default)]
    struct Warnings(Arc<Mutex<Vec<String>>>);

    impl Warnings {
        /// Captures warnings until the guard drops (`traces::scoped`: no
        /// sibling test's thread caches the warning's callsite as unwanted).
        fn capture(&self) -> tracing::subscriber::DefaultGuard {
            use tracing_subscriber::layer::SubscriberExt;
            super::common::traces::scoped(tracing_subscriber::registry().with(self.clone()))
        }
    }

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Warnings {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            struct Visit(String);
            impl tracing::field::Visit for Visit {
                fn record_debug(
                    &mut self,
                    field: &tracing::field::Field,
                    value: &dyn std::fmt::Debug,
                ) {
                    self.0.push_str(&format!("{}={:?} ", field.name(), value));
                }
            }
            if *event.metadata().level() == tracing::Level::WARN {
                let mut visit = Visit(String::new());
                event.record(&mut visit);
                self.0.lock().unwrap().push(visit.0);
            }
        }
    }
}
