//! Reading a job's edges: its dependencies with how each ended (the
//! resolution text its queue keeps, so a dependency's queue trimming the
//! job loses nothing), and its dependents (docs/protocol.md, "Results").

use crate::error::{Error, Result};
use crate::jobs::Jobs;
use crate::queue::Queue;
use crate::transport::decode;
use crate::transport::dispatch::Call;
use crate::worker::JobContext;
use echomq_protocol::{JobId, Transition};
use redis::Value;
use serde::de::DeserializeOwned;

/// How many edges a page asks for (a hint to the server's `HSCAN`).
const PAGE: u64 = 500;

/// How a dependency ended, as its dependent received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DependencyOutcome {
    /// Not ended yet.
    Waiting,
    /// Completed. `result` is its result as stored (JSON text), or `None`
    /// when it was larger than 64 KiB (`size` says how large): a worker
    /// that makes larger results stores them elsewhere and returns a
    /// pointer.
    Completed {
        /// The result's length in bytes.
        size: u64,
        /// The result itself, when at most 64 KiB.
        result: Option<Vec<u8>>,
    },
    /// Ended dead after `failures` failed attempts.
    Dead {
        /// Failed attempts.
        failures: u64,
        /// Its last error (the first 4 KiB).
        error: String,
    },
    /// Cancelled (a start-by deadline's expiry included).
    Cancelled,
    /// Deleted before it ended (removed, drained, obliterated), or never
    /// written.
    Removed,
}

impl DependencyOutcome {
    /// The outcome's word: `wait`, `completed`, `dead`, `cancelled`,
    /// `removed`.
    pub fn word(&self) -> &'static str {
        match self {
            DependencyOutcome::Waiting => "wait",
            DependencyOutcome::Completed { .. } => "completed",
            DependencyOutcome::Dead { .. } => "dead",
            DependencyOutcome::Cancelled => "cancelled",
            DependencyOutcome::Removed => "removed",
        }
    }
}

/// One dependency of a job: which job, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// Its ref in its flow, from its resolution: none for a job outside
    /// any flow, and until it has ended.
    pub reference: Option<String>,
    /// Its queue.
    pub queue: String,
    /// Its id.
    pub id: JobId,
    /// How it ended.
    pub outcome: DependencyOutcome,
}

impl Dependency {
    /// Its result decoded as JSON to `R`: `None` unless it completed with
    /// a result kept (at most 64 KiB).
    pub fn result<R: DeserializeOwned>(&self) -> Option<Result<R>> {
        match &self.outcome {
            DependencyOutcome::Completed {
                result: Some(result),
                ..
            } => Some(serde_json::from_slice(result).map_err(Error::JobResult)),
            _ => None,
        }
    }
}

/// One dependent of a job, and whether its queue was told how the job
/// ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependent {
    /// Its queue.
    pub queue: String,
    /// Its id.
    pub id: JobId,
    /// Whether the job's outcome was delivered to it.
    pub told: bool,
}

impl<T> Jobs<T> {
    /// Every dependency of job `id`, with how each ended. `NOJOB` for a
    /// job that does not exist.
    pub async fn dependencies(&self, id: &JobId) -> Result<Vec<Dependency>> {
        Ok(dependencies(&self.queue, id, usize::MAX).await?.0)
    }

    /// Every dependent of job `id` (jobs of any flow that run after it).
    /// `NOJOB` when neither the job nor an undelivered outcome of it
    /// exists.
    pub async fn dependents(&self, id: &JobId) -> Result<Vec<Dependent>> {
        Ok(dependents(&self.queue, id, usize::MAX).await?.0)
    }
}

/// The dependents of job `id`, the first `most` read (all of them with
/// `usize::MAX`; a page may take a few more), and whether it has more.
pub(super) async fn dependents<T>(
    queue: &Queue<T>,
    id: &JobId,
    most: usize,
) -> Result<(Vec<Dependent>, bool)> {
    let (edges, more) = pages(queue, Transition::FlowDependents, id, most).await?;
    let dependents = edges
        .into_iter()
        .map(|(queue, id, told)| Dependent {
            queue,
            id,
            told: told == b"1",
        })
        .collect();
    Ok((dependents, more))
}

impl<T> JobContext<T> {
    /// Every dependency of the job in hand, with how each ended and its
    /// result: what a flow's job reads of the jobs it ran after.
    pub async fn dependencies(&self) -> Result<Vec<Dependency>> {
        Ok(dependencies(&self.queue, &self.id, usize::MAX).await?.0)
    }
}

/// The dependencies of job `id`, the first `most` read (all of them with
/// `usize::MAX`; a page may take a few more), and whether it has more.
pub(super) async fn dependencies<T>(
    queue: &Queue<T>,
    id: &JobId,
    most: usize,
) -> Result<(Vec<Dependency>, bool)> {
    let (edges, more) = pages(queue, Transition::FlowDeps, id, most).await?;
    let dependencies = edges
        .into_iter()
        .map(|(queue, id, value)| {
            let (reference, outcome) =
                resolution(&value).ok_or_else(|| Error::UnexpectedReply {
                    transition: Transition::FlowDeps,
                    detail: format!("edge value {}", decode::escaped(value.clone())),
                })?;
            Ok(Dependency {
                reference,
                queue,
                id,
                outcome,
            })
        })
        .collect::<Result<_>>()?;
    Ok((dependencies, more))
}

/// Every `[queue, id, value]` of a paged edge read of job `id`, up to the
/// page that reaches `most` of them, and whether the read stopped before
/// the last page.
async fn pages<T>(
    queue: &Queue<T>,
    transition: Transition,
    id: &JobId,
    most: usize,
) -> Result<(Vec<(String, JobId, Vec<u8>)>, bool)> {
    let mut edges = Vec::new();
    let mut cursor = 0;
    loop {
        let call = Call::new(transition, Some(id))
            .arg(id.as_str())
            .arg("CURSOR")
            .int(cursor)
            .arg("COUNT")
            .int(PAGE);
        let mut reply = decode::array(transition, queue.call(call).await?)?.into_iter();
        let (Some(next), Some(items)) = (reply.next(), reply.next()) else {
            return Err(Error::UnexpectedReply {
                transition,
                detail: "expected [cursor, edges]".into(),
            });
        };
        let items = decode::array(transition, items)?;
        for triple in items.chunks(3) {
            let [queue, id, value] = triple else {
                return Err(Error::UnexpectedReply {
                    transition,
                    detail: "edges not in threes".into(),
                });
            };
            edges.push((
                decode::text(transition, queue.clone())?,
                JobId::new(decode::text(transition, id.clone())?)?,
                match value {
                    // FLOW.DEPENDENTS's told, 0 or 1.
                    Value::Int(told) => told.to_string().into_bytes(),
                    value => decode::bytes(transition, value.clone())?,
                },
            ));
        }
        cursor = match next {
            Value::Int(cursor) => cursor as u64,
            text => {
                decode::text(transition, text)?
                    .parse()
                    .map_err(|_| Error::UnexpectedReply {
                        transition,
                        detail: "a cursor that is not a number".into(),
                    })?
            }
        };
        if cursor == 0 || edges.len() >= most {
            return Ok((edges, cursor != 0));
        }
    }
}

/// An edge's value: `wait`, or a resolution text (its ref, `-` for none,
/// and its outcome). `None` for anything else.
fn resolution(value: &[u8]) -> Option<(Option<String>, DependencyOutcome)> {
    if value == b"wait" {
        return Some((None, DependencyOutcome::Waiting));
    }
    let mut parts = value.splitn(4, |b| *b == b' ');
    let word = parts.next()?;
    let reference = std::str::from_utf8(parts.next()?).ok()?;
    let reference = (reference != "-").then(|| reference.to_string());
    let number = |part: Option<&[u8]>| std::str::from_utf8(part?).ok()?.parse::<u64>().ok();
    let outcome = match word {
        b"completed" => {
            let size = number(parts.next())?;
            let result = parts.next()?;
            DependencyOutcome::Completed {
                size,
                result: (result.len() as u64 == size).then(|| result.to_vec()),
            }
        }
        b"dead" => DependencyOutcome::Dead {
            failures: number(parts.next())?,
            error: String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned(),
        },
        b"cancelled" => DependencyOutcome::Cancelled,
        b"removed" => DependencyOutcome::Removed,
        _ => return None,
    };
    Some((reference, outcome))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_resolution_text_reads_as_its_outcome() {
        let completed = resolution(b"completed fetch 8 {\"a\": 1}").unwrap();
        assert_eq!(completed.0.as_deref(), Some("fetch"));
        assert_eq!(
            completed.1,
            DependencyOutcome::Completed {
                size: 8,
                result: Some(b"{\"a\": 1}".to_vec())
            }
        );
        assert_eq!(
            resolution(b"completed - 0 ").unwrap(),
            (
                None,
                DependencyOutcome::Completed {
                    size: 0,
                    result: Some(Vec::new())
                }
            )
        );
        assert_eq!(
            resolution(b"completed big 70000 ").unwrap().1,
            DependencyOutcome::Completed {
                size: 70000,
                result: None
            },
            "over FLOW_RESULT_MAX: by size only"
        );
        assert_eq!(
            resolution(b"dead a 3 boom: it broke").unwrap().1,
            DependencyOutcome::Dead {
                failures: 3,
                error: "boom: it broke".into()
            }
        );
        assert_eq!(
            resolution(b"cancelled a").unwrap().1,
            DependencyOutcome::Cancelled
        );
        assert_eq!(
            resolution(b"removed -").unwrap(),
            (None, DependencyOutcome::Removed)
        );
        assert_eq!(resolution(b"wait").unwrap().1, DependencyOutcome::Waiting);
    }

    #[test]
    fn other_values_are_not_resolutions() {
        for value in [
            &b""[..],
            b"waiting",
            b"completed",
            b"completed a x y",
            b"dead a",
            b"gone a",
        ] {
            assert_eq!(
                resolution(value),
                None,
                "{:?}",
                String::from_utf8_lossy(value)
            );
        }
    }
}
