//! The actions on one queue: `POST /queues/{queue}/act/{action}`.

use super::Fields;
use crate::error::PageError;
use crate::state::App;
use serde_json::Value;

/// Runs queue action `action` on queue `name`; the notice to show.
pub(super) async fn act(
    app: &App,
    name: &str,
    action: &str,
    _fields: &Fields,
) -> Result<String, PageError> {
    let queue = app.connector.queue::<Value>(name)?;
    match action {
        "pause" => {
            queue.admin().pause().await?;
            Ok(format!("paused {name}"))
        }
        "resume" => {
            queue.admin().resume().await?;
            Ok(format!("resumed {name}"))
        }
        _ => Err(PageError::NotFound(format!(
            "no queue action named {action:?}"
        ))),
    }
}
