//! The writer task: every outcome ready at once goes out in one pipeline.
//! The completions of a batch travel as `complete_bulk` calls (one script
//! run, or one `EMQ.COMPLETE.BULK`, for many jobs); failures as single
//! `FAIL` calls. While rides are open, the last completion call carries a
//! claim for the slots the batch frees (see `ride.rs`).

use super::options::Counters;
use super::ride::{Ride, Rides};
use super::telemetry::JobOutcome;
use crate::claim_batch::ClaimBatch;
use crate::error::{Error, Result};
use crate::job::FailOutcome;
use crate::queue::{
    BULK_COMPLETIONS, Queue, add_completion, bulk_complete_call, complete_call_json,
    completion_word, decode_fail,
};
use crate::transport::decode;
use crate::transport::dispatch::Call;
use echomq_protocol::{Form, JobId, Refusal, Transition};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use metrics::Histogram;
use redis::Value;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::sync::{Notify, OwnedSemaphorePermit, watch};

/// Most outcomes per pipeline.
const MAX_BATCH: usize = 1024;
/// Pipelines of outcomes on the wire at once: the next batch goes out
/// while the last one's replies are on their way back.
const IN_FLIGHT: usize = 2;
/// How long a batch's outcomes are sent again while they fail for a reason
/// that passes ([`Error::is_transient`]) before they are given up to the
/// stalled sweep.
const RESEND_FOR: Duration = Duration::from_secs(10);
/// The longest wait between two sends of the same outcomes.
const RESEND_PAUSE_MAX: Duration = Duration::from_secs(1);

/// What a finished attempt asks for.
pub(crate) enum Verdict {
    /// COMPLETE with this JSON result (`null` stores none).
    Complete(Vec<u8>),
    /// This FAIL, DELAY or REQUEUE call.
    Call(Call),
    /// Nothing: the lease was lost, the job is someone else's now.
    Nothing,
    /// Nothing: the job blocked on the children it spawned (`FLOW.WAIT`
    /// voided the token).
    Parked,
}

/// One finished attempt waiting to be written.
pub(crate) struct Outcome {
    pub id: JobId,
    pub token: u64,
    pub verdict: Verdict,
    /// Its place in the writer's queue, held until the outcome is
    /// written; dropping it lets the next finished handler in.
    pub _place: OwnedSemaphorePermit,
    /// The slot its handler ran in: a ride's, or let go by the writer.
    pub slot: Option<OwnedSemaphorePermit>,
}

/// How far the writer got with the outcomes handed to it: how many were
/// handed over, how many are on the connection (their pipeline queued on
/// it, so the server runs them before any command sent after), and a
/// notice each time a pipeline's replies are in.
pub(crate) struct Progress {
    handed: AtomicU64,
    sent: watch::Sender<u64>,
    written: Notify,
}

impl Progress {
    pub(crate) fn new() -> Self {
        Self {
            handed: AtomicU64::new(0),
            sent: watch::Sender::new(0),
            written: Notify::new(),
        }
    }

    /// Hands `outcome` to the writer.
    pub(crate) fn hand(&self, outcomes: &UnboundedSender<Outcome>, outcome: Outcome) {
        self.handed.fetch_add(1, Ordering::SeqCst);
        // The writer only stops after the claim loop ends, so the send
        // cannot fail while jobs run.
        let _ = outcomes.send(outcome);
    }

    /// Records that the first `taken` outcomes handed over are on the
    /// connection (a batch sent before an earlier one's cannot lower it).
    fn mark_sent(&self, taken: u64) {
        self.sent.send_if_modified(|sent| {
            let before = *sent;
            *sent = before.max(taken);
            *sent != before
        });
    }

    /// Waits until every outcome handed over so far is on the connection:
    /// a command sent after that reaches the server after them.
    pub(crate) async fn all_sent(&self) {
        let handed = self.handed.load(Ordering::SeqCst);
        let mut sent = self.sent.subscribe();
        // The sender lives as long as `self`: this cannot fail.
        let _ = sent.wait_for(|&sent| sent >= handed).await;
    }

    /// Waits until the writer next has a pipeline's replies (at once when
    /// one came in since the last wait): its outcomes are on the server.
    pub(crate) async fn written(&self) {
        self.written.notified().await;
    }
}

/// A call of the pipeline and the outcomes (by index) it carries.
struct Planned {
    call: Call,
    outcomes: Vec<usize>,
    /// Whether it carries the batch's ride: its claim is the reply's last
    /// entry (after the completions' words), or the whole reply of a
    /// plain CLAIM (no outcomes).
    ride: bool,
}

pub(crate) async fn write_outcomes<T>(
    queue: Queue<T>,
    mut outcomes: UnboundedReceiver<Outcome>,
    counters: Arc<Counters>,
    progress: Arc<Progress>,
    rides: Arc<Rides<T>>,
    held: usize,
) {
    let batch_max = batch_max(held);
    let writer = Writer {
        queue: &queue,
        counters: &counters,
        progress: &progress,
        rides: &rides,
    };
    let mut taken = 0;
    let mut flights = FuturesUnordered::new();
    let mut open = true;
    while open || !flights.is_empty() {
        tokio::select! {
            biased;
            Some(()) = flights.next(), if !flights.is_empty() => {}
            batch = next_batch(&mut outcomes, batch_max), if open && flights.len() < IN_FLIGHT => match batch {
                Some(batch) => {
                    taken += batch.len() as u64;
                    flights.push(writer.write(batch, taken));
                }
                None => open = false,
            },
        }
    }
}

/// The most outcomes one pipeline takes from a worker that holds `held`
/// jobs: half of them, once a half is two jobs or more.
///
/// A worker's whole batch in one pipeline is a ping-pong: the server runs
/// it while the client waits, then the client runs the jobs it claimed
/// while the server waits (the server writes the replies of what it read
/// at once only after running all of it, so two pipelines sent together
/// come back together). Two halves, sent as each is ready, keep one half
/// on the server while the client runs the other. A half of one job would
/// double the calls per job, and a small batch's cost is its call's.
fn batch_max(held: usize) -> usize {
    if held >= 2 * IN_FLIGHT {
        held.div_ceil(IN_FLIGHT).min(MAX_BATCH)
    } else {
        held.clamp(1, MAX_BATCH)
    }
}

/// Every outcome handed over by now, at least one and at most `max`;
/// `None` once the claim loop has ended and all were taken.
async fn next_batch(outcomes: &mut UnboundedReceiver<Outcome>, max: usize) -> Option<Vec<Outcome>> {
    let mut batch = Vec::with_capacity(max);
    (outcomes.recv_many(&mut batch, max).await > 0).then_some(batch)
}

/// What the writer's pipelines share.
struct Writer<'a, T> {
    queue: &'a Queue<T>,
    counters: &'a Counters,
    progress: &'a Progress,
    rides: &'a Rides<T>,
}

impl<T> Writer<'_, T> {
    /// Writes one batch in one pipeline, its ride with it; `taken` counts
    /// the outcomes handed over up to this batch's last.
    async fn write(&self, mut batch: Vec<Outcome>, taken: u64) {
        let (queue, counters) = (self.queue, self.counters);
        let slots = self
            .rides
            .take(batch.iter_mut().filter_map(|o| o.slot.take()).collect());
        let mut plan = plan(&batch, queue.connector().has_bulk(Transition::Complete));
        if !slots.is_empty() {
            ride_along(&mut plan, self.rides, slots.len());
        }
        // A lease found voided: nothing is written, the attempt ends here.
        let voided = batch
            .iter()
            .filter(|outcome| matches!(outcome.verdict, Verdict::Nothing))
            .count();
        if voided > 0 {
            counters
                .metrics
                .finished(JobOutcome::LeaseLost, voided as u64);
        }
        let parked = batch
            .iter()
            .filter(|outcome| matches!(outcome.verdict, Verdict::Parked))
            .count();
        if parked > 0 {
            counters.finish(JobOutcome::Blocked, parked as u64);
        }
        if plan.is_empty() {
            // Only lost leases and blocked jobs: nothing to write, just
            // free their places.
            self.progress.mark_sent(taken);
            return;
        }
        let calls: Vec<Call> = plan.iter().map(|planned| planned.call.clone()).collect();
        let sending = send_with_retries(queue, &calls, &counters.metrics.outcome_write);
        let sent = || self.progress.mark_sent(taken);
        let mut claimed = None;
        match after_first_poll(sending, sent).await {
            Ok(replies) => {
                for (planned, reply) in plan.iter().zip(replies) {
                    let reply = if planned.ride {
                        let (rest, part) = ride_part(queue, planned, reply);
                        claimed = Some(part);
                        match rest {
                            Some(rest) => rest,
                            None => continue,
                        }
                    } else {
                        reply
                    };
                    record(queue, counters, &batch, planned, reply);
                }
                // Decisions with dependents to tell: relayed beside the
                // worker's next writes.
                queue.spawn_relay_noted();
            }
            Err(err) => {
                let jobs: usize = plan.iter().map(|planned| planned.outcomes.len()).sum();
                tracing::error!(queue = %queue.name(), error = %err, jobs,
                    "could not write job outcomes; the stalled sweep will recover them");
                counters.finish(JobOutcome::WriteFailed, jobs as u64);
                claimed = (!slots.is_empty()).then_some(Err(err));
            }
        }
        if let Some(claimed) = claimed {
            self.rides.answer(Ride { claimed, slots });
        }
        // The outcomes are on the server: free their places (dropping the
        // batch), and tell a claim loop waiting for room under the cap.
        drop(batch);
        self.progress.written.notify_one();
    }
}

/// Puts the batch's ride on its plan: a claim for `count` jobs at the end
/// of its last bulk completion call, or, with none, as a plain CLAIM last.
fn ride_along<T>(plan: &mut Vec<Planned>, rides: &Rides<T>, count: usize) {
    let carrier = plan
        .iter_mut()
        .rev()
        .find(|planned| planned.call.form == Form::Bulk);
    match carrier {
        Some(planned) => {
            planned.call.args.extend(rides.tail(count));
            planned.ride = true;
        }
        None => plan.push(Planned {
            call: rides.call(count),
            outcomes: Vec::new(),
            ride: true,
        }),
    }
}

/// Splits the reply of the call that carried the ride: what is left for
/// its outcomes (none for a plain CLAIM), and the claim's part. When the
/// carrying call failed whole, its outcomes keep the error and the claim
/// gets one that names it.
fn ride_part<T>(
    queue: &Queue<T>,
    planned: &Planned,
    reply: Result<Value>,
) -> (Option<Result<Value>>, Result<ClaimBatch<T>>) {
    if planned.outcomes.is_empty() {
        return (None, reply.and_then(|part| queue.claimed_part(part)));
    }
    match reply {
        Ok(Value::Array(mut words)) if words.len() == planned.outcomes.len() + 1 => {
            let part = words.pop().unwrap_or(Value::Nil);
            (Some(Ok(Value::Array(words))), queue.claimed_part(part))
        }
        Ok(other) => {
            let unexpected = decode::unexpected(Transition::Claim, &other);
            (Some(Ok(other)), Err(unexpected))
        }
        Err(err) => {
            let detail = err.to_string();
            (
                Some(Err(err)),
                Err(Error::UnexpectedReply {
                    transition: Transition::Claim,
                    detail,
                }),
            )
        }
    }
}

/// Awaits `future`, calling `then` once it has been polled the first time:
/// a command it sends is then queued on the connection (the pipeline of a
/// multiplexed connection is queued on its first poll).
async fn after_first_poll<F: Future>(future: F, then: impl FnOnce()) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut then = Some(then);
    std::future::poll_fn(|cx| {
        let poll = future.as_mut().poll(cx);
        if let Some(then) = then.take() {
            then();
        }
        poll
    })
    .await
}

/// Groups completions into bulk calls (when the wire has them), everything
/// else one call each.
fn plan(batch: &[Outcome], bulk_completions: bool) -> Vec<Planned> {
    let mut plan = Vec::new();
    let mut bulk: Option<Planned> = None;
    for (index, outcome) in batch.iter().enumerate() {
        match &outcome.verdict {
            Verdict::Complete(result) if bulk_completions => {
                let planned = bulk.get_or_insert_with(|| Planned {
                    call: bulk_complete_call(),
                    outcomes: Vec::new(),
                    ride: false,
                });
                planned.call = add_completion(
                    std::mem::replace(&mut planned.call, bulk_complete_call()),
                    &outcome.id,
                    outcome.token,
                    result,
                );
                planned.outcomes.push(index);
                if planned.outcomes.len() == BULK_COMPLETIONS {
                    plan.extend(bulk.take());
                }
            }
            Verdict::Complete(result) => plan.push(Planned {
                call: complete_call_json(&outcome.id, outcome.token, result.clone()),
                outcomes: vec![index],
                ride: false,
            }),
            Verdict::Nothing | Verdict::Parked => {}
            Verdict::Call(call) => plan.push(Planned {
                call: call.clone(),
                outcomes: vec![index],
                ride: false,
            }),
        }
    }
    plan.extend(bulk);
    plan
}

/// Sends `calls` in one pipeline. A pipeline that fails whole, and each
/// call that failed for a reason that passes ([`Error::is_transient`]: the
/// connection dropped under it, the server out of memory or loading), go
/// again — 50 ms later, then twice as long each time up to
/// [`RESEND_PAUSE_MAX`] — for up to [`RESEND_FOR`]. Errs only when no call
/// of the batch got an answer. Each send's round trip goes to `latency`.
async fn send_with_retries<T>(
    queue: &Queue<T>,
    calls: &[Call],
    latency: &Histogram,
) -> Result<Vec<Result<Value>>> {
    let mut replies: Vec<Option<Result<Value>>> = calls.iter().map(|_| None).collect();
    let mut pause = Duration::from_millis(50);
    let mut last_error = None;
    let started = tokio::time::Instant::now();
    for round in 0.. {
        let unsent: Vec<usize> = (0..calls.len())
            .filter(|&i| replies[i].as_ref().is_none_or(passing))
            .collect();
        if unsent.is_empty() {
            break;
        }
        if round > 0 {
            if started.elapsed() + pause > RESEND_FOR {
                break;
            }
            tracing::warn!(queue = %queue.name(), calls = unsent.len(), "sending outcomes again");
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(RESEND_PAUSE_MAX);
        }
        let resend: Vec<Call>;
        let sending = if unsent.len() == calls.len() {
            calls
        } else {
            resend = unsent.iter().map(|&i| calls[i].clone()).collect();
            &resend
        };
        let sent_at = std::time::Instant::now();
        let answers = queue.call_many(sending).await;
        latency.record(sent_at.elapsed());
        match answers {
            Ok(answers) => {
                for (i, answer) in unsent.into_iter().zip(answers) {
                    replies[i] = Some(answer);
                }
            }
            Err(err) => {
                tracing::warn!(queue = %queue.name(), error = %err, "writing outcomes failed");
                last_error = Some(err);
            }
        }
    }
    if let Some(err) = last_error.filter(|_| replies.iter().all(Option::is_none)) {
        return Err(err);
    }
    Ok(replies
        .into_iter()
        .map(|reply| {
            reply.unwrap_or_else(|| {
                Err(Error::Redis(redis::RedisError::from((
                    redis::ErrorKind::Io,
                    "not sent: the connection stayed down",
                ))))
            })
        })
        .collect())
}

/// Whether a reply failed for a reason that passes (worth sending again).
fn passing(reply: &Result<Value>) -> bool {
    matches!(reply, Err(err) if err.is_transient())
}

/// Counts what one reply says about the outcomes it carried.
/// A job whose decision answered `relay_*` is kept for the relay
/// (`Queue::note_relay`, see `outbox.rs`) and counted as its plain word.
fn record<T>(
    queue: &Queue<T>,
    counters: &Counters,
    batch: &[Outcome],
    planned: &Planned,
    reply: Result<Value>,
) {
    let bulk = planned.outcomes.len() > 1 || planned.call.form == Form::Bulk;
    if !bulk {
        let outcome = &batch[planned.outcomes[0]];
        if let Ok(reply) = &reply
            && relayed(planned.call.transition, reply)
        {
            queue.note_relay(&outcome.id);
        }
        count(counters, &outcome.id, planned.call.transition, reply);
        return;
    }
    let per_job = reply.and_then(|reply| decode::array(Transition::Complete, reply));
    match per_job {
        Ok(words) if words.len() == planned.outcomes.len() => {
            for (&index, word) in planned.outcomes.iter().zip(words) {
                let id = &batch[index].id;
                let result = completion_word(queue, id, word).map(|()| Value::Okay);
                count(counters, id, Transition::Complete, result);
            }
        }
        other => {
            let detail = match other {
                Ok(words) => format!(
                    "{} replies for {} jobs",
                    words.len(),
                    planned.outcomes.len()
                ),
                Err(err) => err.to_string(),
            };
            tracing::error!(
                detail,
                "bulk completion failed; the stalled sweep will recover these jobs"
            );
            counters.finish(JobOutcome::WriteFailed, planned.outcomes.len() as u64);
        }
    }
}

/// Whether a single COMPLETE's or FAIL's reply is a `relay_*` word.
fn relayed(transition: Transition, reply: &Value) -> bool {
    matches!(transition, Transition::Complete | Transition::Fail)
        && decode::text(transition, reply.clone())
            .is_ok_and(|word| crate::outbox::relay_word(&word).1)
}

fn count(counters: &Counters, id: &JobId, transition: Transition, reply: Result<Value>) {
    let outcome = match (transition, reply) {
        (Transition::Complete, Ok(_)) => Ok(JobOutcome::Completed),
        (Transition::Delay, Ok(_)) => Ok(JobOutcome::Delayed),
        (Transition::Requeue, Ok(_)) => Ok(JobOutcome::Released),
        (Transition::Fail, Ok(reply)) => match decode_fail(reply) {
            Ok(FailOutcome::Retry) => Ok(JobOutcome::Retried),
            Ok(FailOutcome::Dead) => Ok(JobOutcome::Dead),
            Ok(FailOutcome::Cancelled) => Ok(JobOutcome::Cancelled),
            Ok(FailOutcome::RateLimited) => Ok(JobOutcome::RateLimited),
            Err(err) => Err(err),
        },
        (_, Ok(_)) => return,
        (_, Err(err)) => Err(err),
    };
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(Error::Refused(refused)) if refused.reason == Refusal::NotActive => {
            tracing::warn!(id = %id, "lease lost before the outcome was written; the job was already taken back");
            JobOutcome::LeaseLost
        }
        Err(err) => {
            tracing::error!(id = %id, error = %err, "outcome refused");
            JobOutcome::WriteFailed
        }
    };
    counters.finish(outcome, 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipeline_takes_half_the_held_jobs_once_a_half_is_two_or_more() {
        // Too few to halve: a half of one job would double the calls.
        assert_eq!(batch_max(1), 1);
        assert_eq!(batch_max(2), 2);
        assert_eq!(batch_max(3), 3);
        // Halves, the odd job with the first.
        assert_eq!(batch_max(4), 2);
        assert_eq!(batch_max(5), 3);
        assert_eq!(batch_max(100), 50);
        // Never more than a pipeline takes.
        assert_eq!(batch_max(5_000), MAX_BATCH);
    }
}
