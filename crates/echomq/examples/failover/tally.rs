//! The verdict: the clients' ledger held against the surviving server's
//! record of every acknowledged job.

use super::ledger::{Ledger, Run, Runner};
use echomq::{Durability, JobId, JobRecord, JobState, Queue};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;

/// Reads of job records in flight at once.
const READERS: usize = 16;

/// What the run comes to.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Enqueues acknowledged to a producer (distinct jobs).
    pub(crate) acknowledged: u64,
    /// Enqueue attempts that failed (`NotDurable`, I/O) and were sent again.
    pub(crate) unacknowledged_attempts: u64,
    /// Handler runs, all jobs.
    pub(crate) runs: u64,
    /// Of them, runs of `emq worker --exec` commands.
    pub(crate) exec_runs: u64,
    /// Acknowledged jobs that ran at least once.
    pub(crate) ran: u64,
    /// Acknowledged jobs that never ran.
    pub(crate) lost: u64,
    /// Jobs that ran more than once (at-least-once allows it).
    pub(crate) run_more_than_once: u64,
    /// Completed jobs whose accepted completion is not the last claim's:
    /// the run it names held another token than the job's last claim, or
    /// another run held the same token (two claims the fence could not
    /// tell apart), or it names no run of the job.
    pub(crate) fence_breaches: u64,
    /// Acknowledged jobs that ran but are not completed at the end (gone
    /// from the server, or in another state).
    pub(crate) stuck: u64,
    /// Of the acknowledged jobs, those the server holds no record of.
    pub(crate) gone: u64,
}

impl Tally {
    /// What fails a run at `level`: above memory, any loss, breach or
    /// stuck job; at memory, a fence breach (the fence holds at every
    /// level).
    pub(crate) fn failures(&self, level: Durability) -> Vec<String> {
        let mut failures = Vec::new();
        if self.fence_breaches > 0 {
            failures.push(format!("{} fence breaches", self.fence_breaches));
        }
        if level != Durability::Memory {
            if self.lost > 0 {
                failures.push(format!("{} acknowledged jobs lost", self.lost));
            }
            if self.stuck > 0 {
                failures.push(format!("{} jobs stuck", self.stuck));
            }
        }
        failures
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rows = [
            ("acknowledged enqueues", self.acknowledged),
            ("unacknowledged attempts", self.unacknowledged_attempts),
            ("handler runs", self.runs),
            ("  of them by emq worker --exec", self.exec_runs),
            ("acknowledged jobs that ran", self.ran),
            ("lost (acknowledged, never ran)", self.lost),
            ("jobs run more than once", self.run_more_than_once),
            ("fence breaches", self.fence_breaches),
            ("stuck (ran, not completed)", self.stuck),
            ("acknowledged, no record left", self.gone),
        ];
        for (name, value) in rows {
            writeln!(f, "{name:<34}{value:>10}")?;
        }
        Ok(())
    }
}

/// Reads every acknowledged job from the server and holds the ledger
/// against it.
pub(crate) async fn take(queue: &Queue<Value>, ledger: &Ledger) -> echomq::Result<Tally> {
    let (acknowledged, unacknowledged_attempts, runs) = ledger.snapshot();
    let records = read_all(queue, &acknowledged).await?;
    let mut runs_of: HashMap<&str, Vec<usize>> = HashMap::new();
    for (n, run) in runs.iter().enumerate() {
        runs_of.entry(run.id.as_str()).or_default().push(n);
    }
    let mut tally = Tally {
        acknowledged: acknowledged.len() as u64,
        unacknowledged_attempts,
        runs: runs.len() as u64,
        exec_runs: runs.iter().filter(|run| run.by == Runner::Exec).count() as u64,
        ..Tally::default()
    };
    tally.run_more_than_once = runs_of.values().filter(|runs| runs.len() > 1).count() as u64;
    for (id, record) in acknowledged.iter().zip(&records) {
        let ran = runs_of.get(id.as_str()).map_or(&[][..], Vec::as_slice);
        tally.gone += u64::from(record.is_none());
        tally.ran += u64::from(!ran.is_empty());
        let completed = record.as_ref().filter(|r| r.state == JobState::Completed);
        match (ran.is_empty(), completed) {
            (true, _) => tally.lost += 1,
            (false, None) => tally.stuck += 1,
            (false, Some(record)) => {
                tally.fence_breaches += u64::from(!fenced(record, ran, &runs));
            }
        }
    }
    Ok(tally)
}

/// Whether the completion `record` holds came from the job's last claim,
/// and from it alone: the run its result names (a library worker's by its
/// number, an exec worker's by its token) ran this job under the token of
/// the record's last claim (docs/protocol.md, Fencing: `claimed_at × 1000
/// + claims mod 1000`), and no other run held that token.
fn fenced(record: &JobRecord, ran: &[usize], runs: &[Run]) -> bool {
    let Some(named) = named_run(record, ran, runs) else {
        return false;
    };
    let Some(claimed_at) = record.claimed_at else {
        return false;
    };
    let last_claim = claimed_at * 1000 + record.claims % 1000;
    let token = runs[named].token;
    let sharing = ran.iter().filter(|run| runs[**run].token == token).count();
    token == last_claim && sharing == 1
}

/// The run of this job (of `ran`) that `record`'s result names: `{"run":
/// n}` from a library worker, `{"exec_token": t}` from an exec worker.
fn named_run(record: &JobRecord, ran: &[usize], runs: &[Run]) -> Option<usize> {
    let result = serde_json::from_str::<Value>(record.result.as_deref()?).ok()?;
    if let Some(run) = result["run"].as_u64() {
        let run = usize::try_from(run).ok()?;
        return ran
            .contains(&run)
            .then_some(run)
            .filter(|run| runs[*run].by == Runner::Library);
    }
    let token = result["exec_token"].as_u64()?;
    ran.iter()
        .copied()
        .find(|run| runs[*run].by == Runner::Exec && runs[*run].token == token)
}

/// The server's record of each of `ids`, in order (`None`: no record).
async fn read_all(queue: &Queue<Value>, ids: &[String]) -> echomq::Result<Vec<Option<JobRecord>>> {
    let chunk = ids.len().div_ceil(READERS).max(1);
    let readers: Vec<tokio::task::JoinHandle<echomq::Result<Vec<Option<JobRecord>>>>> = ids
        .chunks(chunk)
        .map(|ids| {
            let (jobs, ids) = (queue.jobs(), ids.to_vec());
            tokio::spawn(async move {
                let mut records: Vec<Option<JobRecord>> = Vec::with_capacity(ids.len());
                for id in ids {
                    let id = JobId::new(id).expect("a valid job id");
                    records.push(jobs.get(&id).await?);
                }
                echomq::Result::Ok(records)
            })
        })
        .collect();
    let mut records = Vec::with_capacity(ids.len());
    for reader in readers {
        records.extend(reader.await.expect("a reader of job records")?);
    }
    Ok(records)
}

/// The breach check on records made up for it: a broken fence is rare
/// enough that a run on today's code may never show one, so the check
/// itself is tested here (the suite compiles this file).
#[cfg(test)]
mod tests {
    use super::{JobRecord, Run, Runner, fenced};
    use echomq::{JobId, JobState};

    /// A completed job last claimed at 1000 ms, its third claim: token
    /// 1_000_003; its result names run `run`.
    fn completed(run: usize) -> JobRecord {
        with_result(format!("{{\"run\":{run}}}"))
    }

    /// The same job completed by an exec worker's command that ran under
    /// `token`.
    fn completed_by_exec(token: u64) -> JobRecord {
        with_result(format!("{{\"exec_token\":{token}}}"))
    }

    fn with_result(result: String) -> JobRecord {
        JobRecord {
            id: JobId::new("j").unwrap(),
            state: JobState::Completed,
            payload: "{}".into(),
            priority: 0,
            max_attempts: 3,
            claims: 3,
            failures: 0,
            stalls: 0,
            created_at: Some(900),
            run_at: Some(900),
            claimed_at: Some(1000),
            finished_at: Some(1001),
            worker: None,
            progress: None,
            result: Some(result),
            error: None,
            cancel_requested: false,
            repeat: None,
            dedup: None,
            dedup_mode: None,
            group: None,
            traceparent: None,
            time_limit: None,
            start_by: None,
            reason: None,
            lifo: false,
            flow: None,
            flow_ref: None,
            on_failure: echomq::Policy::Fail,
            deps: None,
            deps_left: None,
            dependents: None,
            logs: 0,
        }
    }

    fn runs(tokens: &[u64]) -> Vec<Run> {
        runs_by(
            &tokens
                .iter()
                .map(|t| (*t, Runner::Library))
                .collect::<Vec<_>>(),
        )
    }

    fn runs_by(runs: &[(u64, Runner)]) -> Vec<Run> {
        runs.iter()
            .map(|(token, by)| Run {
                id: "j".into(),
                token: *token,
                by: *by,
            })
            .collect()
    }

    #[test]
    fn the_last_claims_completion_is_fenced() {
        let runs = runs(&[900_001, 1_000_003]);
        assert!(fenced(&completed(1), &[0, 1], &runs));
    }

    #[test]
    fn a_completion_from_a_stale_token_is_a_breach() {
        let runs = runs(&[900_001, 1_000_003]);
        assert!(!fenced(&completed(0), &[0, 1], &runs));
    }

    #[test]
    fn two_runs_under_one_token_are_a_breach() {
        let runs = runs(&[1_000_003, 1_000_003]);
        assert!(!fenced(&completed(1), &[0, 1], &runs));
    }

    #[test]
    fn a_result_that_names_no_run_of_the_job_is_a_breach() {
        let runs = runs(&[1_000_003]);
        assert!(!fenced(&completed(7), &[0], &runs));
    }

    #[test]
    fn an_exec_workers_completion_under_the_last_claim_is_fenced() {
        let runs = runs_by(&[(900_001, Runner::Library), (1_000_003, Runner::Exec)]);
        assert!(fenced(&completed_by_exec(1_000_003), &[0, 1], &runs));
    }

    #[test]
    fn an_exec_workers_completion_from_a_stale_token_is_a_breach() {
        let runs = runs_by(&[(900_001, Runner::Exec), (1_000_003, Runner::Library)]);
        assert!(!fenced(&completed_by_exec(900_001), &[0, 1], &runs));
    }

    #[test]
    fn an_exec_run_and_a_library_run_under_one_token_are_a_breach() {
        let runs = runs_by(&[(1_000_003, Runner::Library), (1_000_003, Runner::Exec)]);
        assert!(!fenced(&completed_by_exec(1_000_003), &[0, 1], &runs));
        assert!(!fenced(&completed(0), &[0, 1], &runs));
    }

    #[test]
    fn an_exec_result_names_no_library_run() {
        let runs = runs_by(&[(1_000_003, Runner::Library)]);
        assert!(!fenced(&completed_by_exec(1_000_003), &[0], &runs));
    }
}
