//! Spawning and waiting (docs/protocol.md, "Spawning and waiting"): a
//! running job adds children and waits for them. `FLOW.WAIT` on the job in
//! hand first, naming every child, so the job is blocked before any child
//! exists and no child can end before its parent waits; then the children
//! are written as a submit writes a flow, dependents first, each with the
//! job among its dependents.

use super::plan::{Node, plan};
use super::submit::check_job;
use super::{Dependency, Flow};
use crate::error::{Error, Result};
use crate::transport::decode;
use crate::transport::dispatch::Call;
use crate::worker::{CancelReason, JobContext, JobError};
use echomq_protocol::arg::FLOW_EDGES_MAX;
use echomq_protocol::{Refusal, Transition};

/// What `FLOW.WAIT` answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waited {
    /// The job left active: it runs again once its children ended.
    Blocked,
    /// Every child had ended already: the handler goes on.
    Ready,
}

impl<T> JobContext<T> {
    /// Adds the jobs of `children` (a [`Flow`] built as for a submit; its
    /// own id is not used) as children of the job in hand and waits for
    /// them. Each child's id is `<job id>:<ref>` and its flow the job's
    /// flow (or the job's id, for a job outside any flow), so a handler
    /// that runs again and spawns the same children spawns nothing new.
    ///
    /// The first time, the job is blocked and this answers
    /// [`JobError::Waiting`]: return it (`?` does) and the worker writes
    /// nothing more for this run, which counts as no failure. Once every
    /// child has ended the job runs again, and the same call answers the
    /// job's dependencies, its children's outcomes and results among
    /// them. A child that ends dead or cancelled ends the job under its
    /// policy ([`Policy`](crate::Policy), `fail` for a job that was not a
    /// flow's), as any dependency does.
    ///
    /// Refused before anything is written: more than 10,000 children (a
    /// job's most dependencies), a child given its own id
    /// ([`NewJob::id`](crate::NewJob::id)), an id `<job id>:<ref>` that
    /// breaks the job-id rule (so a job whose id is longer than a flow id
    /// may be spawns nothing), and whatever a submit refuses; each is a
    /// [`JobError::Permanent`]. A lost lease answers a
    /// [`JobError::Retryable`] after firing the token
    /// ([`CancelReason::LeaseLost`]); the worker then writes nothing.
    ///
    /// ```no_run
    /// use echomq::{Flow, JobContext, JobError, NewJob, Queue};
    /// use serde_json::{Value, json};
    ///
    /// async fn render(ctx: JobContext<Value>, pages: Queue<Value>) -> Result<Value, JobError> {
    ///     let mut children = Flow::new("pages");
    ///     for page in 1..=3 {
    ///         children.add_as(&format!("page{page}"), &pages, NewJob::new(json!({ "page": page })));
    ///     }
    ///     // The first run ends here (blocked); the next one gets the results.
    ///     let rendered = ctx.spawn_and_wait(&children).await?;
    ///     Ok(json!(rendered.len()))
    /// }
    /// ```
    pub async fn spawn_and_wait(
        &self,
        children: &Flow,
    ) -> std::result::Result<Vec<Dependency>, JobError> {
        match self.spawn(children).await {
            Ok(Waited::Blocked) => Err(JobError::Waiting),
            Ok(Waited::Ready) => self.dependencies().await.map_err(|err| self.job_error(err)),
            Err(err) => Err(self.job_error(err)),
        }
    }

    /// Checks the children and their ids, sends `FLOW.WAIT`, and on
    /// `blocked` writes them.
    async fn spawn(&self, children: &Flow) -> Result<Waited> {
        let refuse = |reason: String| Error::BadArgument {
            name: "spawn_and_wait",
            reason,
        };
        if children.jobs.len() > FLOW_EDGES_MAX as usize {
            return Err(refuse(format!(
                "{} children, more than a job's {FLOW_EDGES_MAX} dependencies",
                children.jobs.len()
            )));
        }
        let mut nodes = Vec::with_capacity(children.jobs.len());
        for job in &children.jobs {
            check_job(job)?;
            if let Some(id) = &job.node.id {
                return Err(refuse(format!(
                    "child {} has its own id {id}: a spawned child's id is <job id>:<ref>",
                    job.node.reference
                )));
            }
            nodes.push(Node {
                id: Some(format!("{}:{}", self.id, job.node.reference)),
                ..job.node.clone()
            });
        }
        let flow = self.flow_id().await?;
        let mut plan = plan(&flow, &nodes)?;
        let parent = (self.queue().as_str().to_string(), self.id.clone());
        let mut call = Call::new(Transition::FlowWait, Some(&self.id))
            .arg(self.id.as_str())
            .int(self.token);
        for planned in plan.waves.iter_mut().flatten() {
            let queue = children.jobs[planned.index].node.queue.as_str();
            call = call.arg(queue).arg(planned.id.as_str());
            planned.before.push(parent.clone());
        }
        let reply = self.queue.call(call).await?;
        match decode::text(Transition::FlowWait, reply)?.as_str() {
            "ready" => return Ok(Waited::Ready),
            "blocked" => {}
            other => {
                return Err(Error::UnexpectedReply {
                    transition: Transition::FlowWait,
                    detail: other.to_string(),
                });
            }
        }
        let connector = self.queue.connector();
        if let Err(err) = connector.write_plan(&flow, children, &plan).await {
            // The job is blocked: the worker may write nothing for it. Its
            // children's edges resolve `removed` at its check-up.
            tracing::error!(id = %self.id, error = %err,
                "the job waits for children not all written; its check-up will end it");
        }
        Ok(Waited::Blocked)
    }

    /// The job's flow id, or its id when it belongs to none.
    async fn flow_id(&self) -> Result<String> {
        let key = self.queue.keys().job(&self.id);
        let [flow]: [Option<String>; 1] = self
            .queue
            .query(redis::cmd("HMGET").arg(key).arg("flow"))
            .await?;
        Ok(flow.unwrap_or_else(|| self.id.as_str().to_string()))
    }

    /// A spawn's error as the handler's: a refusal before anything was
    /// written is permanent; a lost lease fires the token.
    fn job_error(&self, err: Error) -> JobError {
        match &err {
            Error::BadArgument { .. } => JobError::permanent(err),
            Error::Refused(refused) if refused.reason == Refusal::NotActive => {
                self.control.fire(CancelReason::LeaseLost);
                JobError::retry(err)
            }
            _ => JobError::retry(err),
        }
    }
}

#[cfg(test)]
mod tests {
    /// The lines of the first code block after `opening` in `text`, each
    /// with `strip` taken off its start.
    fn block(text: &str, opening: &str, strip: &str) -> Vec<String> {
        let at = text.find(opening).expect("the block's opening") + opening.len();
        text[at..]
            .lines()
            .skip(1)
            .map(|line| {
                let line = line.trim_start();
                line.strip_prefix(strip).unwrap_or(line).trim_start()
            })
            .take_while(|line| !line.starts_with("```"))
            .map(str::trim_end)
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_guide_shows_the_doctest_of_spawn_and_wait() {
        let source = include_str!("spawn.rs");
        let guide = include_str!("../../../../docs/flows.md");
        let doctest = block(source, "/// ```no_run", "///");
        let shown = block(guide, "```rust,no_run", "");
        let trim = |lines: Vec<String>| -> Vec<String> {
            lines.into_iter().map(|l| l.trim().to_string()).collect()
        };
        assert!(!doctest.is_empty());
        assert_eq!(trim(shown), trim(doctest), "docs/flows.md's spawn sample");
    }
}
