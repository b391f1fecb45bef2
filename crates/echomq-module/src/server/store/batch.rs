//! Many jobs per command: the bodies ENQUEUE, SCHEDULE and COMPLETE share
//! with their bulk forms (`enqueue_jobs` of `scripts/include/enqueue.lua`
//! and `complete_jobs` of `complete.lua`). Each job of a bulk command
//! behaves exactly as its single command would, in order. The bulk
//! commands themselves are in `commands/spine.rs` and `commands/time.rs`.

use crate::server::args::WRONGTYPE;
use crate::server::args::refuse;
use crate::server::clock::now_ms;
use crate::server::fast_hash::FastSet;
use crate::server::key::{Digits, Kind};
use crate::server::store::fifo::by_fifo;
use crate::server::store::metrics::Tally;
use crate::server::store::outbox::completed_tail;
use crate::server::store::{DependentsRead, EnqueueSettings, NewJob, Settings, Store, score};
use echomq_protocol::arg::{DEFAULT_MAX_ATTEMPTS, FLOW_INLINE_EDGES, TRIM_PER_TRANSITION};
use echomq_protocol::metrics::Outcome;
use echomq_protocol::{DedupMode, QueueKey};
use valkey_module::ValkeyError;

/// One completion: id, token, and the result to store (none when empty).
pub(crate) struct Completion {
    pub id: Vec<u8>,
    pub token: u64,
    pub result: Option<Vec<u8>>,
}

/// What COMPLETE did to one job (`complete_jobs`' value per job).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Completed {
    /// Completed.
    Done,
    /// Completed, and its resolution written: the reply is
    /// `relay_completed`.
    Relay,
    /// Not held by its caller: `NOTACTIVE`.
    NotHeld,
}

impl Completed {
    /// The reply word of COMPLETE.BULK for the job.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Completed::Done => "OK",
            Completed::Relay => "relay_completed",
            Completed::NotHeld => "NOTACTIVE",
        }
    }
}

impl Store<'_> {
    /// The whole of ENQUEUE and SCHEDULE (and their bulk forms) once
    /// arguments are checked (`enqueue_checked`): reads what it needs of
    /// the settings, checks the type of every key it may write (the
    /// schedule set when `scheduling`; the dedup keys' when it reads them),
    /// then creates `jobs` (one job with a dedup key goes through
    /// `enqueue_deduplicated`). Returns `(id, code)` per job: 1
    /// created, 0 existed, 2 deduplicated, 3 debounced.
    pub(crate) fn enqueue_checked(
        &self,
        mut jobs: Vec<NewJob>,
        scheduling: bool,
    ) -> Result<Vec<(Vec<u8>, i64)>, ValkeyError> {
        let conf = self.enqueue_settings()?;
        self.expect_types(&[
            (QueueKey::Id, Kind::String),
            (QueueKey::Seq, Kind::String),
            (QueueKey::Pending, Kind::Zset),
        ])?;
        if scheduling {
            self.expect_types(&[(QueueKey::Schedule, Kind::Zset)])?;
        }
        self.expect_types(&[
            (QueueKey::Events, Kind::Stream),
            (QueueKey::Signal, Kind::Zset),
        ])?;
        // A grouped job's keys are read (types checked) before the first write.
        let group = jobs.first().and_then(|job| job.group.as_deref());
        self.read_group(conf.groups || group.is_some(), true, group)?;
        // Only a job with a deadline enters (and type-checks) the deadlines set.
        if jobs.iter().any(|job| job.deadlines.start_by.is_some()) {
            self.expect_types(&[(QueueKey::Deadlines, Kind::Zset)])?;
        }
        if jobs.len() == 1 && jobs[0].dedup.is_some() {
            let job = jobs.remove(0);
            return self.enqueue_deduplicated(&conf, job, now_ms());
        }
        self.enqueue_jobs(&conf, jobs, now_ms())
    }

    /// Creates each job unless its id exists (`enqueue_jobs`): id `*` takes
    /// the next free counter value, skipping ids taken or given in the same
    /// batch; due jobs go to pending (those [`by_fifo`] to `fifo`, taking
    /// no seq), later ones to the schedule set.
    pub(crate) fn enqueue_jobs(
        &self,
        conf: &EnqueueSettings,
        jobs: Vec<NewJob>,
        now: u64,
    ) -> Result<Vec<(Vec<u8>, i64)>, ValkeyError> {
        let given: Vec<Vec<u8>> = jobs
            .iter()
            .filter(|job| job.id != b"*")
            .map(|job| self.job_key(&job.id))
            .collect();
        let given_set: FastSet<&[u8]> = given.iter().map(Vec::as_slice).collect();
        let mut taken: FastSet<Vec<u8>> =
            FastSet::with_capacity_and_hasher(jobs.len(), Default::default());
        for key in &given {
            match self.kind(key) {
                Kind::None => {}
                Kind::Hash => {
                    taken.insert(key.clone());
                }
                _ => return Err(refuse(WRONGTYPE)),
            }
        }

        let generated = jobs.iter().filter(|job| job.id == b"*").count() as i64;
        let mut fresh = Vec::new();
        if generated > 0 {
            let counter = self.key(QueueKey::Id);
            let last = self.incr_by(counter, generated)?;
            let mut candidates: Vec<Vec<u8>> = (last - generated + 1..=last)
                .map(|n| n.to_string().into_bytes())
                .collect();
            let unusable = |id: &[u8]| {
                let key = self.job_key(id);
                given_set.contains(key.as_slice()) || self.exists(&key)
            };
            if candidates.iter().any(|id| unusable(id)) {
                for id in &mut candidates {
                    while unusable(id) {
                        *id = self.incr(counter)?.to_string().into_bytes();
                    }
                }
            }
            fresh = candidates;
        }

        let mut reply = Vec::with_capacity(jobs.len());
        let mut created = Vec::new();
        let mut fresh = fresh.into_iter();
        for mut job in jobs {
            if job.id == b"*" {
                job.id = fresh.next().unwrap_or_default();
            }
            let key = self.job_key(&job.id);
            let new = taken.insert(key.clone());
            reply.push((job.id.clone(), i64::from(new)));
            if new {
                created.push((key, job));
            }
        }

        let groups_on = self.mark_created(conf, created.iter().map(|(_, job)| job))?;
        let deadlined: Vec<(i64, Vec<u8>)> = created
            .iter()
            .filter_map(|(_, job)| Some((job.deadlines.start_by? as i64, job.id.clone())))
            .collect();
        let (due, later): (Vec<_>, Vec<_>) = created
            .into_iter()
            .map(|(key, job)| {
                let run_at = job.run_at.map(|run_at| run_at.at(now));
                (key, job, run_at.filter(|run_at| *run_at > now))
            })
            .partition(|(_, _, later)| later.is_none());
        let now_s = now.to_string();
        // Every job of the batch writes it.
        self.share(now_s.as_bytes());

        if !due.is_empty() {
            // Seqs only for the jobs that enter the sorted set, in one INCRBY.
            let queued =
                |job: &NewJob| by_fifo(groups_on, job.priority as i64, job.group.as_deref());
            let sequenced = due
                .iter()
                .filter(|(_, job, _)| !(queued(job) || job.lifo))
                .count();
            let mut seq = self.take_seqs(sequenced)?;
            let (mut scored, mut fifo) = (
                Vec::with_capacity(sequenced),
                Vec::with_capacity(due.len() - sequenced),
            );
            for (key, job, _) in &due {
                self.create(key, job, b"pending", None, &now_s)?;
                self.emit(conf.events_max, &[b"event", b"enqueued", b"id", &job.id])?;
                if job.lifo {
                    // Sent alone (no bulk form takes LIFO): nothing else of
                    // the call enters pending.
                    let group = job.group.as_deref();
                    self.push_lifo(groups_on, &job.id, job.priority as i64, group, now)?;
                    continue;
                }
                if queued(job) {
                    fifo.push(job.id.as_slice());
                    continue;
                }
                seq += 1;
                let score = score(job.priority as i64, seq);
                match &job.group {
                    Some(group) => {
                        self.enter_pending(groups_on, &job.id, score, Some(group), now)?
                    }
                    None => scored.push((score, job.id.as_slice())),
                }
            }
            self.push_fifo(&fifo)?;
            if !scored.is_empty() {
                self.zadd(self.key(QueueKey::Pending), &scored)?;
                self.ungrouped_entered(groups_on)?;
            }
            self.signal(0)?;
        }
        if !later.is_empty() {
            let mut scored = Vec::with_capacity(later.len());
            let mut earliest = u64::MAX;
            for (key, job, run_at) in &later {
                let run_at = run_at.unwrap_or(now);
                let run_at_s = run_at.to_string();
                self.create(key, job, b"scheduled", Some(&run_at_s), &now_s)?;
                self.emit(
                    conf.events_max,
                    &[
                        b"event",
                        b"scheduled",
                        b"id",
                        &job.id,
                        b"run_at",
                        run_at_s.as_bytes(),
                    ],
                )?;
                scored.push((run_at as i64, job.id.as_slice()));
                earliest = earliest.min(run_at);
            }
            self.zadd(self.key(QueueKey::Schedule), &scored)?;
            self.signal(earliest)?;
        }
        let deadlined: Vec<(i64, &[u8])> = deadlined
            .iter()
            .map(|(start_by, id)| (*start_by, id.as_slice()))
            .collect();
        self.add_deadlines(&deadlined)?;
        Ok(reply)
    }

    /// The marks a batch of new jobs sets (`mark_queue`), before they
    /// enter any set: the logs mark on the queue's first job; the groups,
    /// traced, timed, lifo and waited marks on the first job that needs
    /// each. Returns whether the queue has groups now.
    pub(crate) fn mark_created<'j>(
        &self,
        conf: &EnqueueSettings,
        jobs: impl Iterator<Item = &'j NewJob> + Clone,
    ) -> Result<bool, ValkeyError> {
        // The first job of the queue sets the logs mark, before the call's
        // jobs enter any set. The first grouped job marks the queue.
        if jobs.clone().next().is_some() && !conf.logs_marked {
            self.mark_logs()?;
        }
        let mut groups_on = conf.groups;
        for job in jobs.clone() {
            if job.group.is_some() {
                groups_on = self.mark_groups(groups_on)?;
            }
        }
        // So does the first job with a trace context (CLAIM reads a job's
        // traceparent only on a marked queue).
        if !conf.traced && jobs.clone().any(|job| job.traceparent.is_some()) {
            self.hset(self.key(QueueKey::Meta), &[b"traced", b"1"])?;
        }
        // And the first with a time limit or a deadline (`timed`).
        if jobs.clone().any(|job| job.deadlines.timed()) {
            self.mark_timed(conf.timed)?;
        }
        // And the first LIFO job (`lifo`), and the first waited for.
        if jobs.clone().any(|job| job.lifo) {
            self.mark_lifo()?;
        }
        if !conf.waited && jobs.clone().any(|job| job.waited) {
            self.hset(self.key(QueueKey::Meta), &[b"waited", b"1"])?;
        }
        Ok(groups_on)
    }

    /// Writes a new job's hash: only its non-empty fields.
    pub(crate) fn create(
        &self,
        key: &[u8],
        job: &NewJob,
        state: &[u8],
        run_at: Option<&String>,
        now_s: &str,
    ) -> Result<(), ValkeyError> {
        let priority = Digits::of(job.priority);
        let attempts = Digits::of(job.attempts);
        // Room for every optional field: a dedup job's hash is built
        // without growing the list.
        let mut fields: Vec<&[u8]> = Vec::with_capacity(28);
        fields.extend([b"state".as_slice(), state, b"payload", &job.payload]);
        // A default is read where the field is absent: not stored.
        if job.priority != 0 {
            fields.extend([b"priority".as_slice(), priority.as_bytes()]);
        }
        if job.attempts != DEFAULT_MAX_ATTEMPTS {
            fields.extend([b"max_attempts".as_slice(), attempts.as_bytes()]);
        }
        fields.extend([b"created_at".as_slice(), now_s.as_bytes()]);
        if let Some(run_at) = run_at {
            fields.extend([b"run_at".as_slice(), run_at.as_bytes()]);
        }
        if let Some(repeat) = &job.repeat {
            fields.extend([b"repeat".as_slice(), repeat]);
        }
        if let Some(dedup) = &job.dedup {
            fields.extend([b"dedup".as_slice(), &dedup.key]);
            // Simple is the mode of a key without one.
            if dedup.mode != DedupMode::Simple {
                fields.extend([b"dedup_mode".as_slice(), dedup.mode.as_str().as_bytes()]);
            }
        }
        if let Some(group) = &job.group {
            fields.extend([b"group".as_slice(), group]);
        }
        if let Some(traceparent) = &job.traceparent {
            fields.extend([b"traceparent".as_slice(), traceparent]);
        }
        let time_limit = job.deadlines.time_limit.map(Digits::of);
        if let Some(time_limit) = &time_limit {
            fields.extend([b"time_limit".as_slice(), time_limit.as_bytes()]);
        }
        let start_by = job.deadlines.start_by.map(Digits::of);
        if let Some(start_by) = &start_by {
            fields.extend([b"start_by".as_slice(), start_by.as_bytes()]);
        }
        if job.lifo {
            fields.extend([b"lifo".as_slice(), b"1"]);
        }
        if job.waited {
            fields.extend([b"waited".as_slice(), b"1"]);
        }
        fields.extend(job.extra.iter().map(Vec::as_slice));
        self.hset(key, &fields)
    }

    /// The whole of COMPLETE (and its bulk form) once arguments are
    /// checked and the settings `conf` read: types first, then each job
    /// completed if its caller holds it, its outcome published when someone
    /// waits for it (`complete_jobs`), its resolution written on a queue
    /// with flows. One outcome per job.
    pub(crate) fn complete_checked(
        &self,
        conf: &Settings,
        jobs: &[Completion],
    ) -> Result<Vec<Completed>, ValkeyError> {
        self.open_outbox(conf)?;
        self.expect_types(&[
            (QueueKey::Active, Kind::Zset),
            (QueueKey::Completed, Kind::Zset),
            (QueueKey::Events, Kind::Stream),
        ])?;
        self.expect_freed_types(conf)?;
        self.expect_own_edge_types(conf)?;
        let now = now_ms();
        let now_s = now.to_string();
        // Every job of the batch writes it.
        self.share(now_s.as_bytes());
        let mut outcome = Vec::with_capacity(jobs.len());
        let mut done: Vec<&[u8]> = Vec::new();
        if conf.groups {
            self.expect_group_keys(true, true)?;
        }
        // Every job hash is read before the first write: a key of the wrong
        // type refuses the whole call.
        let mut holders = Vec::with_capacity(jobs.len());
        let mut dues = Vec::with_capacity(jobs.len());
        for job in jobs {
            let holder = self.holder_with_extra(conf, &job.id, job.token)?;
            let dependents = holder.1[4].as_deref().filter(|_| holder.0.is_some());
            dues.push(self.resolution_due(conf.flows, &job.id, dependents, false)?);
            holders.push(holder);
        }
        if holders
            .iter()
            .any(|(_, [key, _, _, _, _], _)| key.is_some())
        {
            self.expect_owner_type()?;
        }
        // The tally before the first write: only a call that counts
        // something reads (and type-checks) the metrics keys.
        let mut tally = Tally::default();
        if conf.metrics {
            for (holder, _, timing) in &holders {
                if holder.is_some() {
                    tally.finished(Outcome::Completed, *timing, now as i64);
                }
            }
        }
        if !tally.is_empty() {
            self.expect_metrics_types(conf, now)?;
        }
        let mut resolutions = Vec::new();
        for ((job, (holder, [dedup, mode, group, waited, _], _)), due) in
            jobs.iter().zip(holders).zip(dues)
        {
            let Some(key) = holder else {
                outcome.push(Completed::NotHeld);
                continue;
            };
            let mut fields: Vec<&[u8]> =
                vec![b"state", b"completed", b"finished_at", now_s.as_bytes()];
            if let Some(result) = &job.result {
                fields.extend([b"result".as_slice(), result]);
            }
            self.hset(&key, &fields)?;
            let result = job.result.as_deref().unwrap_or_default();
            self.publish_outcome(waited.as_deref(), &job.id, &[b"completed", result])?;
            self.emit(conf.events_max, &[b"event", b"completed", b"id", &job.id])?;
            self.release_dedup(&job.id, dedup.as_deref(), mode.as_deref())?;
            if let Some(group) = &group {
                self.leave_active(conf.group_flow, group, now)?;
            }
            done.push(&job.id);
            if let Some(due) = due {
                resolutions.push((outcome.len(), job, due));
            }
            outcome.push(Completed::Done);
        }
        if !done.is_empty() {
            self.zrem(self.key(QueueKey::Active), &done)?;
            let scored: Vec<(i64, &[u8])> = done.iter().map(|id| (now as i64, *id)).collect();
            self.zadd(self.key(QueueKey::Completed), &scored)?;
            // Resolutions after the moves: the own queue's dependents told
            // in this call, the rest through the outbox. The text only for
            // a job with a resolution due: a queue without flows copies no
            // result.
            let (mut budget, mut held) = (FLOW_INLINE_EDGES, Vec::new());
            let mut read = DependentsRead::default();
            for (at, job, mut due) in resolutions {
                let tail = completed_tail(job.result.as_deref().unwrap_or_default());
                let text = due.text(b"completed", Some(&tail));
                let taking = (&mut held, &mut read);
                self.complete_own_edges(conf, &job.id, &mut due, &text, &mut budget, taking)?;
                if self.write_resolution(&job.id, Some(&due), b"completed", Some(&tail), now)? {
                    outcome[at] = Completed::Relay;
                }
            }
            self.unblock_held(conf, held, now)?;
            let limit = TRIM_PER_TRANSITION as i64 * done.len() as i64;
            self.trim_finished(conf, QueueKey::Completed, limit, now)?;
            self.freed(conf)?;
            self.record_metrics(conf, &tally, now)?;
        }
        Ok(outcome)
    }
}
