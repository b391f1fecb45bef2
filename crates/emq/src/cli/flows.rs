//! Arguments of `emq flow`: flows of jobs that wait for other jobs
//! (docs/flows.md).

use super::whole;
use clap::{Args, Subcommand};

/// The most edges `emq flow show --depth` follows each way.
pub const FLOW_SHOW_DEPTH_MAX: u64 = 10;

/// `emq flow …`.
#[derive(Debug, Subcommand)]
pub enum FlowCommand {
    /// Submit a flow read from a JSON file (or - for stdin): every job
    /// checked before anything is written, then written dependents first;
    /// prints each job's ref, queue and id. Submitting the same flow id
    /// again changes nothing and finishes a submit that died midway.
    Add(FlowAddArgs),
    /// Deliver the outboxes of queues: each resolution of a job decided
    /// with dependents not told yet is applied in its dependents' queues
    /// (what workers and their sweeps do by themselves; for a queue no
    /// worker serves any more, an obliterated one included).
    Relay(FlowRelayArgs),
    /// Draw the DAG around a job: its dependencies and theirs (upstream),
    /// its dependents and theirs (downstream), across queues, up to
    /// --depth edges each way and 100 jobs; each job with its queue, id,
    /// ref and state, each edge with its state (wait, or how the
    /// dependency ended) and whether the dependency's queue told it.
    Show(FlowShowArgs),
}

/// `emq flow show`.
#[derive(Debug, Args)]
pub struct FlowShowArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Job id.
    #[arg(value_name = "id")]
    pub id: String,
    /// Edges followed each way, upstream and downstream (0: the job alone).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = whole::between(0, FLOW_SHOW_DEPTH_MAX))]
    pub depth: u64,
}

/// `emq flow relay`.
#[derive(Debug, Args)]
pub struct FlowRelayArgs {
    /// Queue names.
    #[arg(value_name = "queue", required = true, num_args = 1..)]
    pub queues: Vec<String>,
}

/// `emq flow add`.
#[derive(Debug, Args)]
pub struct FlowAddArgs {
    /// The flow's JSON: {"id": "order-42", "jobs": [{"ref": "fetch",
    /// "queue": "images", "payload": {…}, "after": ["a ref", {"queue":
    /// "q", "id": "a job outside the flow"}], "on_failure":
    /// "fail|ignore|cancel", "id", "priority", "attempts", "group",
    /// "lifo", "delay", "time_limit"}]}; - reads stdin.
    #[arg(value_name = "file")]
    pub file: String,
}
