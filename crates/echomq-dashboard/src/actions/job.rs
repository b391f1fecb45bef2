//! The actions on one job: `POST /queues/{queue}/jobs/{id}/act/{action}`.

use super::Fields;
use crate::error::PageError;
use crate::state::App;
use serde_json::Value;

/// Runs job action `action` on job `id` of queue `name`; the notice to show.
pub(super) async fn act(
    app: &App,
    name: &str,
    id: &str,
    action: &str,
    _fields: &Fields,
) -> Result<String, PageError> {
    let queue = app.connector.queue::<Value>(name)?;
    let id = echomq::JobId::new(id.to_string())?;
    let jobs = queue.jobs();
    match action {
        "reprocess" => {
            jobs.reprocess(&id).await?;
            Ok(format!("job {id} is pending again"))
        }
        _ => Err(PageError::NotFound(format!(
            "no job action named {action:?}"
        ))),
    }
}
