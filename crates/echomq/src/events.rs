//! Reading a queue's lifecycle events (`<base>:events`, a stream).

use crate::error::{Error, Result};
use crate::queue::Queue;
use crate::transport::link::Link;
use echomq_protocol::JobId;
use redis::Value;
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

/// The most entries one read takes of a stream.
pub(crate) const READ_COUNT: usize = 500;

/// What happened, with the event's own fields (`docs/protocol.md` "Events").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// ENQUEUE, or SCHEDULE of a job already due.
    Enqueued,
    /// SCHEDULE of a future job.
    Scheduled {
        /// Its run-at (ms).
        run_at: u64,
    },
    /// A due job moved from the schedule set to pending.
    Promoted,
    /// CLAIM handed the job out.
    Claimed {
        /// The fencing token issued.
        token: u64,
        /// The worker that claimed it.
        worker: String,
    },
    /// COMPLETE.
    Completed,
    /// A failed attempt that will be retried.
    Retried {
        /// The failure message.
        error: String,
        /// The retry delay (ms).
        delay: u64,
    },
    /// Dead-lettered by FAIL.
    Dead {
        /// The failure message.
        error: String,
    },
    /// Cancelled.
    Cancelled,
    /// A cancellation was requested of a running job.
    CancelRequested,
    /// Cancelled, with the reason `expired`, by a claim or the sweep:
    /// its start-by deadline passed before any claim took it.
    Expired {
        /// The deadline that passed (unix ms).
        start_by: u64,
    },
    /// FLOW.ADD of a job with dependencies: it waits, blocked, for them
    /// (docs/protocol.md, "Flows").
    Blocked {
        /// How many of its dependencies are unresolved.
        deps: u64,
    },
    /// FLOW.RESOLVE: one of the job's dependencies was resolved.
    DependencyResolved {
        /// The dependency, `<queue> <id>`.
        dependency: String,
        /// Its outcome: `completed`, `dead`, `cancelled` or `removed`.
        outcome: String,
    },
    /// FLOW.RESOLVE of the job's last unresolved dependency: it waits no
    /// more.
    Unblocked {
        /// Where it went: `pending` or `scheduled`.
        to: String,
    },
    /// FLOW.LINK: a dependent was linked to the job (a job outside a flow
    /// that a flow's job runs after, or a dependent the check-up told
    /// again did not count: only a new one is an event).
    Linked {
        /// The dependent, `<queue> <id>`.
        dependent: String,
    },
    /// DELAY of the job in hand.
    Delayed {
        /// The delay (ms).
        delay: u64,
    },
    /// RESCHEDULE.
    Rescheduled {
        /// The new run-at (ms).
        run_at: u64,
    },
    /// The stalled sweep took the job back.
    Stalled {
        /// Where it went: `pending` or `dead`.
        to: String,
    },
    /// PAUSE.
    Paused,
    /// RESUME.
    Resumed,
    /// DRAIN deleted jobs.
    Drained {
        /// How many.
        count: u64,
    },
    /// UPDATE.
    Updated,
    /// PROGRESS.
    Progress {
        /// The value written.
        progress: String,
    },
    /// REMOVE.
    Removed,
    /// REPROCESS.
    Reprocessed,
    /// REQUEUE.
    Requeued,
    /// An enqueue with a deduplication key another job holds created
    /// nothing; the event's job is the holder.
    Deduplicated {
        /// The deduplication key.
        key: String,
        /// The id the enqueue asked for, or `*` for a generated one.
        requested: String,
    },
    /// An enqueue with `DEBOUNCE` replaced the payload of the waiting job
    /// holding its key and pushed its run-at.
    Debounced {
        /// The deduplication key.
        key: String,
        /// The job's new run-at (ms, server clock).
        run_at: u64,
    },
    /// DEDUP.RELEASE freed a key; the event's job is the one that held it.
    DedupReleased {
        /// The deduplication key.
        key: String,
    },
    /// FAIL … RATE_LIMITED: back to pending, the queue held.
    RateLimited {
        /// The hold asked for (ms).
        retry_in: u64,
    },
    /// LIMIT set or cleared the rate limit.
    LimitSet {
        /// Jobs per window; 0 when cleared.
        max: u64,
        /// The window (ms); 0 when cleared.
        per: u64,
    },
    /// CONCURRENCY set or cleared the cap on active jobs.
    ConcurrencySet {
        /// Jobs active at once; 0 when cleared.
        max: u64,
    },
    /// RETENTION changed the queue's retention: the six settings after
    /// the change (ages in ms, 0 for no age rule).
    RetentionSet {
        /// Completed jobs kept.
        completed: u64,
        /// Age rule of completed jobs (ms); 0 for none.
        completed_for: u64,
        /// Dead jobs kept.
        dead: u64,
        /// Age rule of dead jobs (ms); 0 for none.
        dead_for: u64,
        /// Cancelled jobs kept.
        cancelled: u64,
        /// Age rule of cancelled jobs (ms); 0 for none.
        cancelled_for: u64,
    },
    /// GROUP.PAUSE: claims take none of the group's jobs.
    GroupPaused {
        /// The group.
        group: String,
    },
    /// GROUP.RESUME: claims take the group's jobs again.
    GroupResumed {
        /// The group.
        group: String,
    },
    /// GROUP.LIMIT set or cleared a group's rate limit.
    GroupLimitSet {
        /// The group.
        group: String,
        /// Jobs per window; 0 when cleared.
        max: u64,
        /// The window (ms); 0 when cleared.
        per: u64,
    },
    /// GROUP.CONCURRENCY set or cleared a group's cap on active jobs.
    GroupConcurrencySet {
        /// The group.
        group: String,
        /// Jobs of the group active at once; 0 when cleared.
        max: u64,
    },
    /// An event this client does not know (a newer server).
    Other(String),
}

/// One event: a job's, or the queue's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The id of the stream entry that carries it. An entry carries the
    /// events of several jobs when one call wrote the same event for them
    /// (`docs/protocol.md` "Events"), so events may share it.
    pub stream_id: String,
    /// Its place among its entry's events, from 0.
    pub index: usize,
    /// The job concerned, for job events.
    pub job: Option<JobId>,
    /// What happened.
    pub kind: EventKind,
}

/// Where an event stream starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventsFrom {
    /// The oldest event still kept.
    Beginning,
    /// Only events written from now on.
    Now,
    /// Events after this stream entry, all of it (resuming a reader that
    /// read its entries whole).
    After(String),
    /// Events after this one: the rest of its entry first
    /// ([`Event::resume_after`]).
    AfterEvent {
        /// The entry's id.
        stream_id: String,
        /// The event's place in it.
        index: usize,
    },
}

impl Event {
    /// Where a reader resumes to read on from just after this event, the
    /// rest of its entry included: `queue.events(event.resume_after())`.
    pub fn resume_after(&self) -> EventsFrom {
        EventsFrom::AfterEvent {
            stream_id: self.stream_id.clone(),
            index: self.index,
        }
    }
}

/// A live reader of a queue's events: `XREAD BLOCK` on a connection of its own.
pub struct Events {
    link: Link,
    key: String,
    last: String,
    buffered: VecDeque<Event>,
}

impl<T> Queue<T> {
    /// Reads the queue's lifecycle events, live, starting at `from`.
    pub async fn events(&self, from: EventsFrom) -> Result<Events> {
        let mut link = self
            .connector()
            .dedicated_link()
            .await
            .map_err(|err| self.acl().map(err))?;
        let (last, buffered) = self.events_start(&mut link, from).await?;
        Ok(Events {
            link,
            key: self.keys().events(),
            last,
            buffered: buffered.into(),
        })
    }

    /// Where a reader of the queue's events starts on `link`: the id of
    /// the entry to read after, and the events of a partly read entry
    /// still to hand out.
    pub(crate) async fn events_start(
        &self,
        link: &mut Link,
        from: EventsFrom,
    ) -> Result<(String, Vec<Event>)> {
        let acl = self.acl();
        let mut buffered = Vec::new();
        let last = match from {
            EventsFrom::Beginning => "0-0".to_string(),
            EventsFrom::After(id) => id,
            EventsFrom::AfterEvent { stream_id, index } => {
                // The rest of the event's entry, if it is still kept
                // (`XREVRANGE` of one id: the reader's own read command).
                let entry: Vec<Entry> = redis::cmd("XREVRANGE")
                    .arg(self.keys().events())
                    .arg(&stream_id)
                    .arg(&stream_id)
                    .query_async(link)
                    .await
                    .map_err(|err| acl.refusal(err))?;
                for (id, fields) in entry {
                    buffered.extend(parse(id, fields)?.into_iter().skip(index + 1));
                }
                stream_id
            }
            EventsFrom::Now => {
                let newest: Vec<(String, Vec<String>)> = redis::cmd("XREVRANGE")
                    .arg(self.keys().events())
                    .arg("+")
                    .arg("-")
                    .arg("COUNT")
                    .arg(1)
                    .query_async(link)
                    .await
                    .map_err(|err| acl.refusal(err))?;
                newest
                    .into_iter()
                    .next()
                    .map_or_else(|| "0-0".to_string(), |(id, _)| id)
            }
        };
        Ok((last, buffered))
    }
}

impl<T> Queue<T> {
    /// The events of the newest `count` entries still kept in the queue's
    /// events stream (an entry may carry several jobs' events), oldest
    /// first: one bounded read (`XREVRANGE … COUNT count`), for a
    /// look back (a job's history on the dashboard) rather than a live
    /// reader ([`Queue::events`]). An empty stream, or `count` 0, is none.
    pub async fn recent_events(&self, count: u64) -> Result<Vec<Event>> {
        if count == 0 {
            return Ok(Vec::new());
        }
        let newest: Vec<Entry> = self
            .query(
                redis::cmd("XREVRANGE")
                    .arg(self.keys().events())
                    .arg("+")
                    .arg("-")
                    .arg("COUNT")
                    .arg(count),
            )
            .await?;
        let mut events = Vec::new();
        for (id, fields) in newest.into_iter().rev() {
            events.extend(parse(id, fields)?);
        }
        Ok(events)
    }
}

impl Events {
    /// The next event, waiting for one to be written.
    pub async fn next(&mut self) -> Result<Event> {
        loop {
            if let Some(event) = self.next_within(Duration::from_secs(5)).await? {
                return Ok(event);
            }
        }
    }

    /// The next event, or `None` when none arrives within `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Result<Option<Event>> {
        if let Some(event) = self.buffered.pop_front() {
            return Ok(Some(event));
        }
        let reply: Value = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(READ_COUNT)
            .arg("BLOCK")
            .arg((wait.as_millis() as u64).max(1))
            .arg("STREAMS")
            .arg(&self.key)
            .arg(&self.last)
            .query_async(&mut self.link)
            .await?;
        for (id, fields) in entries(reply)? {
            self.last = id.clone();
            self.buffered.extend(parse(id, fields)?);
        }
        Ok(self.buffered.pop_front())
    }
}

/// One stream entry: its id and its flat `[field, value…]` list.
pub(crate) type Entry = (String, Vec<String>);

/// The entries of an XREAD reply (one stream).
fn entries(reply: Value) -> Result<Vec<Entry>> {
    Ok(streams(reply)?
        .into_iter()
        .flat_map(|(_, entries)| entries)
        .collect())
}

/// Each stream of an XREAD reply with its entries: none when the read
/// timed out.
pub(crate) fn streams(reply: Value) -> Result<Vec<(String, Vec<Entry>)>> {
    if reply == Value::Nil {
        return Ok(Vec::new());
    }
    redis::from_redis_value(reply).map_err(|err| Error::UnexpectedEvent(err.to_string()))
}

/// The events of one entry: one, or one per job when the entry carries
/// several (`docs/protocol.md` "Events": each `id` starts a job's fields).
pub(crate) fn parse(stream_id: String, flat: Vec<String>) -> Result<Vec<Event>> {
    let mut word = String::new();
    let mut jobs: Vec<HashMap<String, String>> = vec![HashMap::new()];
    let mut items = flat.into_iter();
    while let (Some(name), Some(value)) = (items.next(), items.next()) {
        if name == "event" {
            word = value;
            continue;
        }
        if name == "id" && jobs.last().is_some_and(|job| job.contains_key("id")) {
            jobs.push(HashMap::new());
        }
        if let Some(job) = jobs.last_mut() {
            job.insert(name, value);
        }
    }
    jobs.into_iter()
        .enumerate()
        .map(|(index, fields)| event(stream_id.clone(), index, &word, fields))
        .collect()
}

/// One job's event (or the entry's, for an event of no job): `word` with
/// its fields.
fn event(
    stream_id: String,
    index: usize,
    word: &str,
    mut fields: HashMap<String, String>,
) -> Result<Event> {
    let mut take = |name: &str| fields.remove(name).unwrap_or_default();
    let number = |text: String| text.parse::<u64>().unwrap_or(0);
    let job = match take("id") {
        id if id.is_empty() => None,
        id => Some(JobId::new(id)?),
    };
    let kind = match word {
        "enqueued" => EventKind::Enqueued,
        "scheduled" => EventKind::Scheduled {
            run_at: number(take("run_at")),
        },
        "promoted" => EventKind::Promoted,
        "claimed" => EventKind::Claimed {
            token: number(take("token")),
            worker: take("worker"),
        },
        "completed" => EventKind::Completed,
        "retried" => EventKind::Retried {
            error: take("error"),
            delay: number(take("delay")),
        },
        "dead" => EventKind::Dead {
            error: take("error"),
        },
        "cancelled" => EventKind::Cancelled,
        "cancel_requested" => EventKind::CancelRequested,
        "expired" => EventKind::Expired {
            start_by: number(take("start_by")),
        },
        "blocked" => EventKind::Blocked {
            deps: number(take("deps")),
        },
        "dependency_resolved" => EventKind::DependencyResolved {
            dependency: take("dependency"),
            outcome: take("outcome"),
        },
        "unblocked" => EventKind::Unblocked { to: take("to") },
        "linked" => EventKind::Linked {
            dependent: take("dependent"),
        },
        "delayed" => EventKind::Delayed {
            delay: number(take("delay")),
        },
        "rescheduled" => EventKind::Rescheduled {
            run_at: number(take("run_at")),
        },
        "stalled" => EventKind::Stalled { to: take("to") },
        "paused" => EventKind::Paused,
        "resumed" => EventKind::Resumed,
        "drained" => EventKind::Drained {
            count: number(take("count")),
        },
        "updated" => EventKind::Updated,
        "progress" => EventKind::Progress {
            progress: take("progress"),
        },
        "removed" => EventKind::Removed,
        "reprocessed" => EventKind::Reprocessed,
        "requeued" => EventKind::Requeued,
        "deduplicated" => EventKind::Deduplicated {
            key: take("key"),
            requested: take("requested"),
        },
        "debounced" => EventKind::Debounced {
            key: take("key"),
            run_at: number(take("run_at")),
        },
        "dedup_released" => EventKind::DedupReleased { key: take("key") },
        "rate_limited" => EventKind::RateLimited {
            retry_in: number(take("retry_in")),
        },
        "limit_set" => EventKind::LimitSet {
            max: number(take("max")),
            per: number(take("per")),
        },
        "concurrency_set" => EventKind::ConcurrencySet {
            max: number(take("max")),
        },
        "retention_set" => EventKind::RetentionSet {
            completed: number(take("completed")),
            completed_for: number(take("completed_for")),
            dead: number(take("dead")),
            dead_for: number(take("dead_for")),
            cancelled: number(take("cancelled")),
            cancelled_for: number(take("cancelled_for")),
        },
        "group_paused" => EventKind::GroupPaused {
            group: take("group"),
        },
        "group_resumed" => EventKind::GroupResumed {
            group: take("group"),
        },
        "group_limit_set" => EventKind::GroupLimitSet {
            group: take("group"),
            max: number(take("max")),
            per: number(take("per")),
        },
        "group_concurrency_set" => EventKind::GroupConcurrencySet {
            group: take("group"),
            max: number(take("max")),
        },
        _ => EventKind::Other(word.to_string()),
    };
    Ok(Event {
        stream_id,
        index,
        job,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use echomq_protocol::Transition;

    fn flat(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| word.to_string()).collect()
    }

    #[test]
    fn an_entry_of_several_jobs_is_one_event_per_job_in_order() {
        let entry = flat(&[
            "event", "claimed", "id", "7", "token", "1", "worker", "w", "id", "8", "token", "3",
            "worker", "w",
        ]);
        let events = parse("5-0".into(), entry).unwrap();
        let claimed = |id: &str, token, index| Event {
            stream_id: "5-0".into(),
            index,
            job: Some(JobId::new(id).unwrap()),
            kind: EventKind::Claimed {
                token,
                worker: "w".into(),
            },
        };
        assert_eq!(events, vec![claimed("7", 1, 0), claimed("8", 3, 1)]);
    }

    #[test]
    fn an_entry_of_one_job_or_of_none_is_one_event() {
        let one = parse("1-0".into(), flat(&["event", "completed", "id", "j"])).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].job, Some(JobId::new("j").unwrap()));
        let none = parse("1-1".into(), flat(&["event", "drained", "count", "4"])).unwrap();
        assert_eq!(none.len(), 1);
        assert_eq!(
            (none[0].job.clone(), none[0].kind.clone()),
            (None, EventKind::Drained { count: 4 })
        );
    }

    #[test]
    fn every_event_of_the_registry_is_one_the_reader_knows() {
        for transition in Transition::ALL {
            for event in transition.control().events {
                let parsed = parse("1-0".into(), vec!["event".into(), event.to_string()]).unwrap();
                assert!(
                    !matches!(parsed[0].kind, EventKind::Other(_)),
                    "{transition} writes {event}, which EventKind does not name"
                );
            }
        }
    }
}
