//! The named transitions (and reads) of PROTOCOL.md.

use std::fmt;

/// One verb of the protocol. Each is one Lua script on wire 4 and one
/// `EMQ.*` command on wire 6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transition {
    /// New job → pending.
    Enqueue,
    /// Pending → active, with a fencing token.
    Claim,
    /// Active → completed.
    Complete,
    /// Active → retry (pending or scheduled), dead or cancelled.
    Fail,
    /// New job → scheduled (or pending when already due).
    Schedule,
    /// Due scheduled jobs → pending.
    Promote,
    /// Active → scheduled, not a failure.
    Delay,
    /// Rescores a scheduled job.
    Reschedule,
    /// Lease checkpoint of an active job.
    Extend,
    /// Recovers or dead-letters jobs whose lease ran out.
    StalledCheck,
    /// Cancels a waiting job, or requests cancellation of an active one.
    Cancel,
    /// Stops claims on the queue.
    Pause,
    /// Resumes claims on the queue.
    Resume,
    /// Deletes pending (and optionally scheduled) jobs.
    Drain,
    /// Deletes the whole queue.
    Obliterate,
    /// Replaces a job's payload.
    Update,
    /// Writes the holder's progress.
    Progress,
    /// Appends a log line.
    Log,
    /// Deletes a job.
    Remove,
    /// Finished → pending.
    Reprocess,
    /// Scheduled or active → pending now.
    Requeue,
    /// Reads a job.
    Get,
    /// Reads the size of every state set.
    Counts,
}

impl Transition {
    /// The verb as written in PROTOCOL.md (`STALLED.CHECK`, `COMPLETE`, …);
    /// the native command is `EMQ.` followed by it.
    pub fn verb(self) -> &'static str {
        match self {
            Transition::Enqueue => "ENQUEUE",
            Transition::Claim => "CLAIM",
            Transition::Complete => "COMPLETE",
            Transition::Fail => "FAIL",
            Transition::Schedule => "SCHEDULE",
            Transition::Promote => "PROMOTE",
            Transition::Delay => "DELAY",
            Transition::Reschedule => "RESCHEDULE",
            Transition::Extend => "EXTEND",
            Transition::StalledCheck => "STALLED.CHECK",
            Transition::Cancel => "CANCEL",
            Transition::Pause => "PAUSE",
            Transition::Resume => "RESUME",
            Transition::Drain => "DRAIN",
            Transition::Obliterate => "OBLITERATE",
            Transition::Update => "UPDATE",
            Transition::Progress => "PROGRESS",
            Transition::Log => "LOG",
            Transition::Remove => "REMOVE",
            Transition::Reprocess => "REPROCESS",
            Transition::Requeue => "REQUEUE",
            Transition::Get => "GET",
            Transition::Counts => "COUNTS",
        }
    }

    /// The native command name, e.g. `EMQ.CLAIM`.
    pub fn command(self) -> String {
        format!("EMQ.{}", self.verb())
    }
}

impl fmt::Display for Transition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.verb().to_ascii_lowercase())
    }
}
