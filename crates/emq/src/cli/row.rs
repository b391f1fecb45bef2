//! Arguments of the verbs on one job's row: `update`, `remove`, `log`
//! (`cancel`, `reprocess` and `requeue` take [`super::IdsArgs`]).

use clap::Args;

/// `emq update`.
#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Job id.
    #[arg(value_name = "id")]
    pub id: String,
    /// The new payload, as JSON.
    #[arg(id = "payload", value_name = "json")]
    pub payload: String,
}

/// `emq remove`.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Job ids: each is handled in turn, one line each; the exit code is 1
    /// when any was refused, and the refused ones are named.
    #[arg(value_name = "id", required = true, num_args = 1..)]
    pub ids: Vec<String>,
    /// Also remove an active job: its lease is voided and its worker told
    /// to stop.
    #[arg(long)]
    pub force: bool,
}

/// `emq log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Job id.
    #[arg(value_name = "id")]
    pub id: String,
    /// The line to append (the newest 1000 lines are kept).
    #[arg(value_name = "line")]
    pub line: String,
}
