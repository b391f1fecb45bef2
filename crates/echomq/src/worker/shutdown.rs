//! Graceful shutdown, after the claim loop stopped: the jobs held finish
//! within the deadline or are told to stop and released to pending, every
//! outcome is written, and claims answered since go back unrun.

use super::claim_loop::ClaimLoop;
use super::control::CancelReason;
use super::crew::Crew;
use super::ride::Ride;
use super::telemetry::JobOutcome;
use crate::JobId;
use crate::queue::requeue_call;
use serde::de::DeserializeOwned;
use std::sync::Mutex;
use std::time::Duration;

/// How long handlers told to stop at shutdown get to return.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

impl<T> ClaimLoop<T>
where
    T: DeserializeOwned + Send + 'static,
{
    /// Waits up to `deadline` for the jobs held, releases the unfinished
    /// past it, stops the tasks beside the loop, lets the writer write
    /// every outcome, and releases the claims answered meanwhile.
    pub(super) async fn shut_down(mut self, deadline: &Mutex<Duration>) {
        self.stop_claiming();
        let grace = *deadline.lock().expect("deadline lock");
        if !self.wait_for_held_jobs(grace).await {
            self.release_unfinished().await;
        }
        self.crew.listener_stop.cancel();
        self.writer.finish().await;
        while let Ok(ride) = self.ridden.try_recv() {
            self.crew.release_ride(ride).await;
        }
    }

    /// No claim rides from here; one already sent is released. A lane
    /// wants no more slots and lets go of the ones handed to it.
    fn stop_claiming(&mut self) {
        if let Some(lane) = &self.crew.lane {
            lane.set_wants(false);
        }
        self.mailbox = None;
        self.crew.rides.set_open(false);
        self.crew.rides.stop_parking();
        self.crew.wakeups.idle.send_replace(false);
    }

    /// Whether every slot came back (each job held finished, its outcome
    /// written) within `grace`; rides answered meanwhile are released.
    async fn wait_for_held_jobs(&mut self, grace: Duration) -> bool {
        let crew = &self.crew;
        let ridden = &mut self.ridden;
        let all = crew.options.held() as u32;
        tokio::time::timeout(grace, async {
            let mut all = std::pin::pin!(crew.slots.acquire_many(all));
            loop {
                tokio::select! {
                    _ = &mut all => break,
                    Some(ride) = ridden.recv() => crew.release_ride(ride).await,
                }
            }
        })
        .await
        .is_ok()
    }

    /// Past the shutdown deadline: tell every running handler to stop, give
    /// them a moment to return (their jobs go back to pending), then abort
    /// the rest and send their jobs back to pending too — none is left to
    /// stall.
    async fn release_unfinished(&mut self) {
        let crew = &self.crew;
        let running = crew.registry.all();
        tracing::warn!(queue = %crew.queue.name(), running = running.len(),
            "shutdown deadline passed; cancelling running jobs and releasing them to pending");
        for control in &running {
            control.fire(CancelReason::Shutdown);
        }
        let all = crew.options.held() as u32;
        if tokio::time::timeout(SHUTDOWN_GRACE, crew.slots.acquire_many(all))
            .await
            .is_err()
        {
            self.tasks.abort_all();
        }
        while self.tasks.join_next().await.is_some() {}
        let abandoned: Vec<JobId> = crew
            .registry
            .all()
            .iter()
            .map(|control| control.id.clone())
            .collect();
        crew.release(&abandoned, "abandoned jobs").await;
    }
}

impl<T> Crew<T> {
    /// Sends `jobs` back to pending (`REQUEUE`), counted released; `what`
    /// names them in the log.
    async fn release(&self, jobs: &[JobId], what: &str) {
        if jobs.is_empty() {
            return;
        }
        let calls: Vec<_> = jobs.iter().map(requeue_call).collect();
        match self.queue.call_many(&calls).await {
            Ok(replies) => {
                let released = replies.iter().filter(|reply| reply.is_ok()).count();
                self.counters.finish(JobOutcome::Released, released as u64);
                tracing::info!(queue = %self.queue.name(), released, "released {what} to pending");
            }
            Err(err) => tracing::error!(queue = %self.queue.name(), error = %err,
                "could not release {what}; the stalled sweep will recover them"),
        }
    }

    /// A ride answered after the worker stopped claiming: its jobs go
    /// straight back to pending (`REQUEUE`), none run.
    async fn release_ride(&self, ride: Ride<T>) {
        let Ok(batch) = ride.claimed else { return };
        let jobs: Vec<JobId> = batch.jobs.into_iter().map(|job| job.id).collect();
        self.release(&jobs, "jobs claimed as the worker stopped")
            .await;
    }
}
