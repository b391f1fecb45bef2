//! [`Queue::enqueue_bulk`]: many jobs in few round trips, each pipeline's
//! calls built while the server works on the pipeline before.

use super::{Queue, check_attempts, decode_enqueued, single_call};
use crate::awaited::EarlyTicket;
use crate::error::Result;
use crate::job::{Enqueued, NewJob, RunAt};
use crate::transport::decode;
use crate::transport::dispatch::{Call, Wire};
use crate::transport::outcome_channel::EarlyWaits;
use echomq_protocol::{JobId, Transition};
use futures_util::StreamExt;
use redis::Value;
use serde::Serialize;
use std::sync::Arc;

/// Jobs per `enqueue_bulk` script call; many calls share one round trip.
const BULK_CHUNK: usize = 500;
/// Jobs per `EMQ.ENQUEUE.BULK` call: a native call costs little of its
/// own, so shorter calls let the server serve other clients (a worker's
/// claim of a due job) between them at no cost in CPU per job.
const NATIVE_BULK_CHUNK: usize = 100;
/// Calls per pipeline.
const BULK_PIPELINE: usize = 20;
/// Pipelines on the wire at once.
const BULK_PIPELINES_IN_FLIGHT: usize = 2;

impl<T: Serialize> Queue<T> {
    /// Enqueues many jobs, thousands per round trip; replies in order.
    /// Scheduled and immediate jobs may be mixed. Each bulk command (500
    /// jobs on wire 4, 100 on wire 6) is atomic, not the whole call: when
    /// the connection drops under it, some of the jobs may be enqueued, and
    /// jobs with ids can be sent again safely (see [`Queue::enqueue`]).
    /// Every job is checked and encoded before the first command is sent:
    /// a job the client refuses (zero attempts, a payload that does not
    /// encode) sends none.
    /// The bulk commands take no dedup key, no group, no trace context,
    /// no time limit, no deadline and no LIFO: a job with one ([`NewJob::dedup`],
    /// [`NewJob::group`], [`NewJob::traceparent`], [`NewJob::time_limit`],
    /// [`NewJob::start_by`], [`NewJob::start_within`], [`NewJob::lifo`]) goes as its own
    /// `ENQUEUE`/`SCHEDULE`, in the same pipeline and in order. (With the `otel` feature, only
    /// [`Queue::enqueue`] records the current trace context by itself.)
    /// Awaited jobs ([`NewJob::awaited`]) go in bulk calls of their own,
    /// closed by `WAITED`, and each one's wait registers as its reply comes.
    pub async fn enqueue_bulk<I, J>(&self, jobs: I) -> Result<Vec<Enqueued>>
    where
        I: IntoIterator<Item = J>,
        J: Into<NewJob<T>>,
    {
        let jobs: Vec<NewJob<T>> = jobs.into_iter().map(Into::into).collect();
        let parts = self.parts(&jobs)?;
        let early = match jobs.iter().any(|job| job.awaited) {
            true => Some(EarlyWaits::begin(self.connector(), self.keys()).await?),
            false => None,
        };
        let mut enqueued: Vec<Enqueued> = Vec::with_capacity(jobs.len());
        let queue = Arc::new(self.typed());
        // Two pipelines on the wire at once: the server works on one while
        // the client builds the next and reads the last one's replies. The
        // first carries one call and each next twice as many, up to
        // BULK_PIPELINE, so the server starts on the first chunk at once.
        let mut parts = parts.into_iter();
        let mut size = 1;
        // Each batch's calls are built as the stream pulls it (when a
        // pipeline's place frees), and hold no borrow of `jobs`: a future
        // holding a `Part<'_>` across the await is not provably `Send`
        // (a higher-ranked lifetime), which kept `enqueue_bulk` out of
        // spawned tasks and axum handlers.
        let batches = std::iter::from_fn(move || {
            let batch: Vec<Call> = parts.by_ref().take(size).map(Part::into_call).collect();
            size = (size * 2).min(BULK_PIPELINE);
            (!batch.is_empty()).then_some(batch)
        });
        let mut pipelines = futures_util::stream::iter(batches)
            .map(|calls| async move { self.call_many(&calls).await })
            .buffered(BULK_PIPELINES_IN_FLIGHT);
        while let Some(replies) = pipelines.next().await {
            let replies = replies?;
            if replies.iter().any(Result::is_ok) {
                self.register().await;
            }
            for reply in replies {
                let items = decode::array(Transition::Enqueue, reply?)?;
                for pair in items.chunks(2) {
                    let mut one = decode_enqueued(Value::Array(pair.to_vec()), &queue)?;
                    if let Some(early) = &early
                        && jobs.get(enqueued.len()).is_some_and(|job| job.awaited)
                    {
                        one.early = Some(EarlyTicket::register(early, &one));
                    }
                    enqueued.push(one);
                }
            }
        }
        Ok(enqueued)
    }

    /// `jobs` as the calls that will carry them, each checked and its
    /// payload encoded. Runs of jobs without a dedup key, a group, a
    /// trace context, a time limit or a deadline go in bulk (awaited and
    /// not awaited ones in calls of their own); each job with one goes
    /// alone, in order.
    fn parts<'a>(&self, jobs: &'a [NewJob<T>]) -> Result<Vec<Part<'a>>> {
        let chunk = match self.connector.wire() {
            Wire::Script => BULK_CHUNK,
            Wire::Native => NATIVE_BULK_CHUNK,
        };
        let alone = NewJob::<T>::has_own_options;
        for job in jobs {
            job.check_no_dependencies()?;
        }
        let mut parts = Vec::new();
        for run in jobs.chunk_by(|a, b| !alone(a) && !alone(b) && a.awaited == b.awaited) {
            let transition = bulk_transition(run);
            if !alone(&run[0]) && self.connector.has_bulk(transition) {
                for chunk in run.chunks(chunk) {
                    parts.push(Part::bulk(transition, chunk, run[0].awaited)?);
                }
            } else {
                for job in run {
                    parts.push(Part::Alone(single_call(job)?));
                }
            }
        }
        Ok(parts)
    }
}

/// What one call of an `enqueue_bulk` carries: a chunk of a run in one
/// bulk call, or one job alone.
enum Part<'a> {
    /// The bulk form of `transition` for jobs whose payloads are encoded.
    Bulk {
        transition: Transition,
        jobs: Vec<BulkJob<'a>>,
        /// Closed by `WAITED`: the jobs are awaited.
        waited: bool,
    },
    /// A job's own `ENQUEUE`/`SCHEDULE`, built.
    Alone(Call),
}

/// One job of a bulk call, checked, its payload encoded.
struct BulkJob<'a> {
    id: Option<&'a JobId>,
    payload: Vec<u8>,
    run_at: Option<RunAt>,
    priority: u8,
    attempts: u64,
}

impl<'a> Part<'a> {
    fn bulk<T: Serialize>(
        transition: Transition,
        chunk: &'a [NewJob<T>],
        waited: bool,
    ) -> Result<Self> {
        let jobs = chunk
            .iter()
            .map(|job| {
                Ok(BulkJob {
                    id: job.id.as_ref(),
                    payload: serde_json::to_vec(&job.payload)?,
                    run_at: job.run_at,
                    priority: job.priority,
                    attempts: check_attempts(job.attempts)?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self::Bulk {
            transition,
            jobs,
            waited,
        })
    }

    /// The call; with `schedule_bulk` immediate jobs ride along as `+0`.
    fn into_call(self) -> Call {
        let (transition, jobs, waited) = match self {
            Self::Alone(call) => return call,
            Self::Bulk {
                transition,
                jobs,
                waited,
            } => (transition, jobs, waited),
        };
        let scheduled = transition == Transition::Schedule;
        let mut call = Call::new(transition, None).bulk();
        for job in jobs {
            call = call
                .arg(job.id.map_or(JobId::GENERATE, JobId::as_str))
                .arg(job.payload);
            if scheduled {
                call = call.arg(job.run_at.unwrap_or(RunAt::In(0)).arg());
            }
            call = call.int(u64::from(job.priority)).int(job.attempts);
        }
        if waited {
            call = call.arg("WAITED");
        }
        call
    }
}

/// The transition whose bulk form `jobs` take: ENQUEUE when no job has a
/// run-at, else SCHEDULE.
fn bulk_transition<T>(jobs: &[NewJob<T>]) -> Transition {
    if jobs.iter().any(|job| job.run_at.is_some()) {
        Transition::Schedule
    } else {
        Transition::Enqueue
    }
}

#[cfg(test)]
mod tests {
    use crate::{NewJob, Queue};

    fn spawnable<F: std::future::Future + Send + 'static>(_: F) {}

    /// Compiles only while `enqueue_bulk`'s future is `Send`: a spawned
    /// task or an axum handler (the HTTP API's bulk enqueue) holds it.
    #[test]
    fn enqueue_bulk_can_be_spawned() {
        let _ = |queue: Queue<serde_json::Value>| {
            spawnable(async move {
                queue
                    .enqueue_bulk(vec![NewJob::new(serde_json::json!(1))])
                    .await
            })
        };
    }
}
