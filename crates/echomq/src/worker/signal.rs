//! Waking an idle worker without polling.
//!
//! A listener task holds a connection of its own and blocks on the queue's
//! signal set (`BZPOPMIN`) while the worker is idle. A marker it pops wakes
//! the claim loop; a marker it pops after the worker got busy again goes
//! back on the set for another idle worker. A timeout (`idle_wait`) wakes
//! the claim loop too: one claim per `idle_wait` is the safety net for a
//! marker lost to a crash.

use super::failure::Failure;
use crate::queue::Queue;
use crate::transport::link::Link;
use redis::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

/// The claim loop's side of the listener.
pub(crate) struct Wakeups {
    /// Fired when the claim loop should claim again.
    pub wake: Arc<Notify>,
    /// Whether the claim loop is idle (waiting for work).
    pub idle: watch::Sender<bool>,
}

impl Wakeups {
    /// Starts the listener for `queue`; it ends when `stop` is cancelled.
    pub(super) fn start<T: Send + 'static>(
        queue: Queue<T>,
        idle_wait: Duration,
        stop: CancellationToken,
        failure: Failure,
    ) -> Self {
        let wake = Arc::new(Notify::new());
        let (idle, idle_rx) = watch::channel(false);
        let listening = listen(queue, idle_rx, wake.clone(), idle_wait, stop, failure);
        tokio::spawn(listening);
        Self { wake, idle }
    }
}

async fn listen<T>(
    queue: Queue<T>,
    mut idle: watch::Receiver<bool>,
    wake: Arc<Notify>,
    idle_wait: Duration,
    stop: CancellationToken,
    failure: Failure,
) {
    let mut link: Option<Link> = None;
    let mut pause = Duration::from_millis(50);
    loop {
        tokio::select! {
            changed = idle.wait_for(|idle| *idle) => if changed.is_err() { return },
            _ = stop.cancelled() => return,
        }
        let popped = tokio::select! {
            popped = pop_marker(&queue, &mut link, idle_wait) => popped,
            _ = stop.cancelled() => return,
        };
        match popped {
            Ok(Some(due)) if !*idle.borrow() => {
                // Busy again: leave the marker for another idle worker.
                if let Err(err) = put_back(&queue, due).await {
                    tracing::warn!(queue = %queue.name(), error = %err, "could not put a wake-up marker back");
                }
            }
            Ok(_) => {
                pause = Duration::from_millis(50);
                wake.notify_one();
            }
            Err(err) => {
                let Err(err) = failure.ends(err) else { return };
                tracing::warn!(queue = %queue.name(), error = %err, "waiting on the signal key failed; reconnecting");
                link = None;
                wake.notify_one();
                tokio::select! { _ = tokio::time::sleep(pause) => {}, _ = stop.cancelled() => return }
                pause = (pause * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// Blocks for a marker; `Some(due)` when one was popped, `None` on timeout.
pub(crate) async fn pop_marker<T>(
    queue: &Queue<T>,
    link: &mut Option<Link>,
    idle_wait: Duration,
) -> crate::Result<Option<f64>> {
    if link.is_none() {
        *link = Some(queue.connector().dedicated_link().await?);
    }
    let conn = link.as_mut().expect("link was just set");
    let reply: Value = redis::cmd("BZPOPMIN")
        .arg(queue.keys().signal())
        .arg(idle_wait.as_secs_f64())
        .query_async(conn)
        .await
        .map_err(|err| queue.acl().refusal(err))?;
    Ok(match reply {
        Value::Array(items) if items.len() == 3 => {
            Some(redis::from_redis_value(items[2].clone()).unwrap_or(0.0))
        }
        _ => None,
    })
}

pub(crate) async fn put_back<T>(queue: &Queue<T>, due: f64) -> crate::Result<()> {
    queue
        .query(
            redis::cmd("ZADD")
                .arg(queue.keys().signal())
                .arg("LT")
                .arg(due as u64)
                .arg("wake"),
        )
        .await
}
