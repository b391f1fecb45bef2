//! The registry of queues (`<prefix>:queues`): a queue joins it once a
//! transition of it succeeded, never on a refused one. Every case runs on
//! a server (wire 4) and again on wire 6 (the module's `EMQ.*`).

mod common;

twins!(
    a_refused_enqueue_leaves_the_queue_out_of_the_registry,
    a_refused_bulk_enqueue_leaves_the_queue_out_of_the_registry,
    an_enqueue_whose_registry_write_fails_succeeds_and_the_next_one_registers,
);

mod cases {
    use super::common::Harness;
    use echomq::protocol::Keyspace;
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

    pub async fn a_refused_enqueue_leaves_the_queue_out_of_the_registry(h: &Harness) {
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

    pub async fn a_refused_bulk_enqueue_leaves_the_queue_out_of_the_registry(h: &Harness) {
        let q = h.queue::<Value>("refused_bulk");
        clobber(&mut h.raw(&q).await, &q.keys().pending()).await;
        let err = q.enqueue_bulk([json!(1), json!(2)]).await.unwrap_err();
        assert!(err.to_string().contains("WRONGTYPE"), "{err}");
        assert_eq!(h.connector.queues().await.unwrap(), Vec::<String>::new());
    }

    pub async fn an_enqueue_whose_registry_write_fails_succeeds_and_the_next_one_registers(
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
        assert_eq!(q.counts().await.unwrap().pending, 2);
    }

    /// Every `WARN` event logged on this thread while captured, as text.
    #[derive(Clone, Default)]
    struct Warnings(Arc<Mutex<Vec<String>>>);

    impl Warnings {
        /// Captures warnings until the guard drops.
        fn capture(&self) -> tracing::subscriber::DefaultGuard {
            use tracing_subscriber::layer::SubscriberExt;
            tracing::subscriber::set_default(tracing_subscriber::registry().with(self.clone()))
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
