//! [`Queue::complete_many`]: the completions of many jobs in hand in one
//! round trip, in the bulk form of `COMPLETE` the worker's writer sends
//! (docs/protocol.md, COMPLETE's bulk form), each job's answer read back
//! on its own. The writer and this share how a bulk call is built and how
//! each job's word of its reply reads.

use super::{Queue, complete_call_json};
use crate::error::{Error, Result};
use crate::outbox::relay_word;
use crate::transport::decode;
use crate::transport::dispatch::Call;
use echomq_protocol::{Form, JobId, Refusal, Refused, Transition};
use redis::Value;
use serde::Serialize;

/// Jobs per bulk `COMPLETE` call.
pub(crate) const BULK_COMPLETIONS: usize = 256;

/// An empty bulk `COMPLETE` call, to [`add_completion`] jobs to.
pub(crate) fn bulk_complete_call() -> Call {
    Call::new(Transition::Complete, None).bulk()
}

/// `call` (a bulk `COMPLETE`) with one more job: its id, token and JSON
/// result (`null` stores none).
pub(crate) fn add_completion(call: Call, id: &JobId, token: u64, result: &[u8]) -> Call {
    let result = if result == b"null" { &[][..] } else { result };
    call.arg(id.as_str()).int(token).arg(result.to_vec())
}

/// One job's word of a bulk `COMPLETE` reply: `OK`; `relay_completed`
/// (its dependents are noted for the queue's relay); or its refusal.
pub(crate) fn completion_word<T>(queue: &Queue<T>, id: &JobId, word: Value) -> Result<()> {
    let word = decode::text(Transition::Complete, word)?;
    match relay_word(&word) {
        ("OK", false) => Ok(()),
        ("completed", true) => {
            queue.note_relay(id);
            Ok(())
        }
        _ => Err(Error::Refused(Refused {
            job: Some(id.clone()),
            transition: Transition::Complete,
            reason: Refusal::parse_line(&word).unwrap_or(Refusal::NotActive),
        })),
    }
}

impl<T> Queue<T> {
    /// Completes many jobs in hand, each `(id, token, result)` (the result
    /// stored as JSON; `()` stores none), in one round trip: bulk
    /// `COMPLETE` calls of up to 256 jobs each, pipelined. Answers each
    /// job in order — `Ok(())`, or its refusal (`NOTACTIVE` when its lease
    /// was lost) — as [`Queue::complete`] would have. Errs whole when a
    /// result does not encode (nothing is sent then) or a call failed
    /// whole (the connection dropped under it: the jobs of the calls that
    /// were answered are completed, and one sent again answers
    /// `NOTACTIVE`).
    pub async fn complete_many<R: Serialize>(
        &self,
        jobs: &[(JobId, u64, R)],
    ) -> Result<Vec<Result<()>>> {
        let encoded = jobs
            .iter()
            .map(|(id, token, result)| {
                let json = serde_json::to_vec(result).map_err(Error::JobResult)?;
                Ok((id, *token, json))
            })
            .collect::<Result<Vec<_>>>()?;
        let bulk = self.connector.has_bulk(Transition::Complete);
        // Each call, and how many jobs it carries.
        let (calls, sizes): (Vec<Call>, Vec<usize>) = if bulk {
            encoded
                .chunks(BULK_COMPLETIONS)
                .map(|chunk| {
                    let call = chunk
                        .iter()
                        .fold(bulk_complete_call(), |call, (id, token, json)| {
                            add_completion(call, id, *token, json)
                        });
                    (call, chunk.len())
                })
                .unzip()
        } else {
            encoded
                .into_iter()
                .map(|(id, token, json)| (complete_call_json(id, token, json), 1))
                .unzip()
        };
        let replies = self.call_many(&calls).await?;
        let mut ids = jobs.iter().map(|(id, _, _)| id);
        let mut answers = Vec::with_capacity(jobs.len());
        let mut failed = None;
        for ((call, size), reply) in calls.iter().zip(sizes).zip(replies) {
            let chunk: Vec<&JobId> = ids.by_ref().take(size).collect();
            let words = match (call.form, reply) {
                (Form::Bulk, Ok(reply)) => decode::array(Transition::Complete, reply),
                (_, Ok(reply)) => Ok(vec![reply]),
                (_, Err(err)) => Err(err),
            };
            match words {
                Ok(words) if words.len() == chunk.len() => answers.extend(
                    chunk
                        .iter()
                        .zip(words)
                        .map(|(id, word)| completion_word(self, id, word)),
                ),
                Ok(words) => {
                    let detail = format!("{} replies for {} jobs", words.len(), chunk.len());
                    answers.extend(chunk.iter().map(|_| {
                        Err(Error::UnexpectedReply {
                            transition: Transition::Complete,
                            detail: detail.clone(),
                        })
                    }));
                }
                Err(err) => failed = failed.or(Some(err)),
            }
        }
        self.relay_noted().await;
        match failed {
            Some(err) => Err(err),
            None => Ok(answers),
        }
    }
}
