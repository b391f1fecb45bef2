//! Arguments of the verbs on many jobs: [`IdsArgs`], what `cancel`,
//! `reprocess` and `requeue` take (one id or several).

use clap::Args;

/// A per-job verb on one job or several (`cancel`, `reprocess`,
/// `requeue`).
#[derive(Debug, Args)]
pub struct IdsArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Job ids: each is handled in turn, one line each; the exit code is 1
    /// when any was refused, and the refused ones are named.
    #[arg(value_name = "id", required = true, num_args = 1..)]
    pub ids: Vec<String>,
}
