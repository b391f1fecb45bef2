//! [`FlowDocument`]: a flow written as JSON (docs/flows.md, "From the
//! command line"), the one reader of it that `emq flow add` and the HTTP
//! API's `POST /api/v1/flows` share.
//!
//! Reading it (serde, unknown fields refused by name) checks its shape;
//! [`FlowDocument::flow`] checks each job's fields (queue names, ids,
//! durations, policies) and builds the library's [`Flow`], whose submit
//! checks the graph (a cycle, a ref used twice or unknown).

use super::{Flow, Policy, Submitted};
use crate::duration::parse_positive_duration;
use crate::job::NewJob;
use crate::transport::connector::Connector;
use echomq_protocol::JobId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A flow as JSON: `{"id": "order-42", "jobs": [...]}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowDocument {
    /// The flow's id: each job's id is `{id}:{ref}` unless it gives one.
    pub id: String,
    /// Its jobs, in any queues.
    pub jobs: Vec<DocumentJob>,
}

/// One job of a [`FlowDocument`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocumentJob {
    /// Its name in the flow, which `after` entries use.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Its queue.
    pub queue: String,
    /// Any JSON.
    pub payload: Value,
    /// The jobs it runs after.
    #[serde(default)]
    pub after: Vec<DocumentAfter>,
    /// `fail`, `ignore` or `cancel` when a dependency fails.
    pub on_failure: Option<String>,
    /// Its id, instead of `{flow}:{ref}`.
    pub id: Option<String>,
    /// 0–255, 0 claimed first.
    pub priority: Option<u8>,
    /// Attempts before it is dead-lettered.
    pub attempts: Option<u64>,
    /// Its group.
    pub group: Option<String>,
    /// Claimed newest first among its priority.
    #[serde(default)]
    pub lifo: bool,
    /// How long after it is unblocked (or written) it may run (`30s`).
    pub delay: Option<String>,
    /// How long a run may last (`5m`).
    pub time_limit: Option<String>,
}

/// One entry of a job's `after`: a ref of the flow, or a job outside it.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum DocumentAfter {
    /// A ref of the flow.
    Ref(String),
    /// A job outside the flow.
    Outside(OutsideJob),
}

/// A job outside the flow: `{"queue": "q", "id": "x"}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutsideJob {
    /// Its queue.
    pub queue: String,
    /// Its id.
    pub id: String,
}

/// A field of a [`FlowDocument`]'s job the library refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("flow {flow}: job {reference}: {field}: {reason}")]
pub struct DocumentError {
    /// The flow's id.
    pub flow: String,
    /// The job's ref.
    pub reference: String,
    /// The field (`queue`, `id`, `delay`, `time_limit`, `on_failure`,
    /// `after`).
    pub field: &'static str,
    /// What was wrong with it.
    pub reason: String,
}

/// Where a submit placed one job of a document, in the document's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlacedJob {
    /// The job's ref.
    #[serde(skip)]
    pub reference: String,
    /// Its queue.
    pub queue: String,
    /// Its id.
    pub id: String,
    /// Whether this submit wrote it (false: it existed, from an earlier
    /// submit of the same flow).
    pub created: bool,
}

impl FlowDocument {
    /// Every queue the document touches (its jobs' and the outside jobs'
    /// of `after`), each once, in the order met.
    pub fn queues(&self) -> Vec<&str> {
        let mut queues: Vec<&str> = Vec::new();
        for job in &self.jobs {
            let outside = job.after.iter().filter_map(|after| match after {
                DocumentAfter::Outside(outside) => Some(outside.queue.as_str()),
                DocumentAfter::Ref(_) => None,
            });
            for queue in std::iter::once(job.queue.as_str()).chain(outside) {
                if !queues.contains(&queue) {
                    queues.push(queue);
                }
            }
        }
        queues
    }

    /// The library's flow of this document, each job's fields checked;
    /// nothing is sent.
    pub fn flow(&self, connector: &Connector) -> Result<Flow, DocumentError> {
        let mut flow = Flow::new(self.id.as_str());
        for job in &self.jobs {
            let queue = connector
                .queue::<Value>(&job.queue)
                .map_err(|err| self.refused(job, "queue", err.to_string()))?;
            let new = self.job(connector, &mut flow, job)?;
            flow.add_as(&job.reference, &queue, new);
        }
        Ok(flow)
    }

    /// Each job's queue, id and whether `submitted` created it, in the
    /// document's order.
    pub fn placed(&self, submitted: &Submitted) -> Vec<PlacedJob> {
        self.jobs
            .iter()
            .filter_map(|job| {
                let enqueued = submitted.by_name(&job.reference)?;
                Some(PlacedJob {
                    reference: job.reference.clone(),
                    queue: job.queue.clone(),
                    id: enqueued.id.as_str().to_string(),
                    created: enqueued.created,
                })
            })
            .collect()
    }

    /// `job` as the library's new job, its `after` resolved in `flow`.
    fn job(
        &self,
        connector: &Connector,
        flow: &mut Flow,
        job: &DocumentJob,
    ) -> Result<NewJob<Value>, DocumentError> {
        let bad = |field: &'static str, reason: String| self.refused(job, field, reason);
        let mut new = NewJob::new(job.payload.clone());
        if let Some(id) = &job.id {
            new = new
                .id(id.as_str())
                .map_err(|err| bad("id", err.to_string()))?;
        }
        if let Some(priority) = job.priority {
            new = new.priority(priority);
        }
        if let Some(attempts) = job.attempts {
            new = new.attempts(attempts);
        }
        if let Some(group) = &job.group {
            new = new.group(group.as_str());
        }
        if job.lifo {
            new = new.lifo();
        }
        if let Some(delay) = &job.delay {
            new = new.after(parse_positive_duration(delay).map_err(|err| bad("delay", err))?);
        }
        if let Some(limit) = &job.time_limit {
            let limit = parse_positive_duration(limit).map_err(|err| bad("time_limit", err))?;
            new = new.time_limit(limit);
        }
        if let Some(word) = &job.on_failure {
            let policy = Policy::parse(word).ok_or_else(|| {
                bad(
                    "on_failure",
                    format!("{word:?} is not fail, ignore or cancel"),
                )
            })?;
            new = new.on_dependency_failure(policy);
        }
        let mut after = Vec::with_capacity(job.after.len());
        for entry in &job.after {
            after.push(match entry {
                DocumentAfter::Ref(name) => flow.job_ref(name),
                DocumentAfter::Outside(outside) => {
                    let queue = connector
                        .queue::<Value>(&outside.queue)
                        .map_err(|err| bad("after", err.to_string()))?;
                    let id = JobId::new(outside.id.as_str())
                        .map_err(|err| bad("after", err.to_string()))?;
                    flow.existing(&queue, &id)
                }
            });
        }
        Ok(new.depends_on(&after))
    }

    fn refused(&self, job: &DocumentJob, field: &'static str, reason: String) -> DocumentError {
        DocumentError {
            flow: self.id.clone(),
            reference: job.reference.clone(),
            field,
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(text: &str) -> FlowDocument {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn a_document_touches_its_jobs_queues_and_its_outside_jobs_each_once() {
        let flow = document(
            r#"{"id": "f", "jobs": [
                {"ref": "a", "queue": "images", "payload": 1},
                {"ref": "b", "queue": "images", "payload": 2,
                 "after": ["a", {"queue": "reports", "id": "r-17"}]},
                {"ref": "c", "queue": "emails", "payload": 3, "after": ["b"]}
            ]}"#,
        );
        assert_eq!(flow.queues(), ["images", "reports", "emails"]);
    }

    #[test]
    fn a_document_refuses_an_unknown_field_naming_it() {
        let text =
            r#"{"id": "f", "jobs": [{"ref": "a", "queue": "q", "payload": 1, "retries": 3}]}"#;
        let err = serde_json::from_str::<FlowDocument>(text).unwrap_err();
        assert!(err.to_string().contains("unknown field `retries`"), "{err}");
    }

    #[test]
    fn a_refused_field_names_the_flow_the_job_and_the_field() {
        let err = DocumentError {
            flow: "f".into(),
            reference: "b".into(),
            field: "delay",
            reason: "\"soon\" has no number".into(),
        };
        assert_eq!(
            err.to_string(),
            "flow f: job b: delay: \"soon\" has no number"
        );
    }
}
