//! `emq watch --job ID --event NAME`: which events a watch shows. Each flag
//! repeats; an event shows when its job is one of the `--job` ids (when any
//! is given: an event of no job, such as `paused`, then never shows) and its
//! name one of the `--event` names (when any is given). Names are checked
//! against the events the protocol writes (every control's `events` in
//! [`echomq::Transition::control`]) before anything is read.

use super::job_id;
use crate::error::CliError;
use echomq::{Event, JobId, Transition};
use std::collections::BTreeSet;

/// The `--job` and `--event` filters of a watch.
#[derive(Debug, Default)]
pub(crate) struct EventFilter {
    jobs: Vec<JobId>,
    names: Vec<String>,
}

impl EventFilter {
    /// Checks the ids and names: a bad id, or a name no control writes, is
    /// a usage error (the latter listing every name).
    pub(crate) fn new(jobs: &[String], names: &[String]) -> Result<Self, CliError> {
        let jobs = jobs
            .iter()
            .map(|id| job_id(id))
            .collect::<Result<Vec<_>, _>>()?;
        let known = known_events();
        if let Some(unknown) = names.iter().find(|name| !known.contains(name.as_str())) {
            let known: Vec<&str> = known.into_iter().collect();
            return Err(CliError::usage(format!(
                "--event {unknown:?} is no event's name: expected one of {}",
                known.join(", ")
            )));
        }
        Ok(Self {
            jobs,
            names: names.to_vec(),
        })
    }

    /// Whether `event`, named `name`, passes.
    pub(crate) fn passes(&self, event: &Event, name: &str) -> bool {
        let job_passes =
            self.jobs.is_empty() || event.job.as_ref().is_some_and(|id| self.jobs.contains(id));
        job_passes && (self.names.is_empty() || self.names.iter().any(|n| n == name))
    }
}

/// Every event name the protocol writes, sorted.
fn known_events() -> BTreeSet<&'static str> {
    Transition::ALL
        .iter()
        .flat_map(|transition| transition.control().events.iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_known_names_are_the_protocols() {
        let known = known_events();
        for name in [
            "enqueued",
            "completed",
            "dead",
            "cancel_requested",
            "group_paused",
        ] {
            assert!(known.contains(name), "{name} in {known:?}");
        }
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_list() {
        let err = EventFilter::new(&[], &["finished".into()]).unwrap_err();
        assert_eq!(err.code, crate::error::EXIT_USAGE);
        assert!(err.message.contains("\"finished\""), "{}", err.message);
        assert!(
            err.message.contains("claimed, completed"),
            "{}",
            err.message
        );
    }
}
