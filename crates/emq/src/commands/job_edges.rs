//! What `emq job` shows of a job's place in a flow beyond its counts: each
//! dependency with how it ended (as the job's own queue keeps it), and
//! each dependent with whether it was told. Read only for a job whose
//! record names edges, so a plain job costs nothing more.

use echomq::{Dependency, Dependent, JobRecord, Jobs};
use serde::Serialize;
use serde_json::Value;

/// Edges each list shows in the text form (`--json` has them all).
const SHOWN: usize = 20;

/// A job's edges, both ways.
#[derive(Debug, Default)]
pub(super) struct Edges {
    dependencies: Vec<Dependency>,
    dependents: Vec<Dependent>,
}

/// `--json`'s `edges`.
#[derive(Debug, Serialize)]
pub(super) struct EdgesJson {
    dependencies: Vec<DependencyJson>,
    dependents: Vec<DependentJson>,
}

#[derive(Debug, Serialize)]
struct DependencyJson {
    queue: String,
    id: String,
    /// Its ref, once it ended (from its resolution).
    #[serde(rename = "ref")]
    reference: Option<String>,
    /// `wait`, or how it ended: `completed`, `dead`, `cancelled`, `removed`.
    edge: &'static str,
}

#[derive(Debug, Serialize)]
struct DependentJson {
    queue: String,
    id: String,
    /// Whether the job's outcome was delivered to it.
    told: bool,
}

impl Edges {
    /// The edges of `record`, read only when it names some.
    pub(super) async fn read(jobs: &Jobs<Value>, record: &JobRecord) -> echomq::Result<Edges> {
        let mut edges = Edges::default();
        if record.deps.is_some() {
            edges.dependencies = gone_is_none(jobs.dependencies(&record.id).await)?;
        }
        if record.dependents.is_some() {
            edges.dependents = gone_is_none(jobs.dependents(&record.id).await)?;
        }
        Ok(edges)
    }

    /// The text form: one line an edge, at most [`SHOWN`] a list.
    pub(super) fn text(&self) -> String {
        let mut text = String::new();
        let dependencies: Vec<String> = self
            .dependencies
            .iter()
            .map(|d| {
                let reference = d
                    .reference
                    .as_deref()
                    .map(|r| format!(" (ref {r})"))
                    .unwrap_or_default();
                format!("{} {}{reference}: edge {}", d.queue, d.id, d.outcome.word())
            })
            .collect();
        let dependents: Vec<String> = self
            .dependents
            .iter()
            .map(|d| {
                let told = if d.told { "told" } else { "not told" };
                format!("{} {}: {told}", d.queue, d.id)
            })
            .collect();
        for (title, lines) in [("dependencies", dependencies), ("dependents", dependents)] {
            if lines.is_empty() {
                continue;
            }
            text.push_str(&format!("{title} ({}):\n", lines.len()));
            for line in lines.iter().take(SHOWN) {
                text.push_str(&format!("  {line}\n"));
            }
            if lines.len() > SHOWN {
                text.push_str(&format!(
                    "  … and {} more (--json lists them all)\n",
                    lines.len() - SHOWN
                ));
            }
        }
        text
    }

    /// `--json`'s `edges`: every edge both ways.
    pub(super) fn json(&self) -> EdgesJson {
        EdgesJson {
            dependencies: self
                .dependencies
                .iter()
                .map(|d| DependencyJson {
                    queue: d.queue.clone(),
                    id: d.id.as_str().to_string(),
                    reference: d.reference.clone(),
                    edge: d.outcome.word(),
                })
                .collect(),
            dependents: self
                .dependents
                .iter()
                .map(|d| DependentJson {
                    queue: d.queue.clone(),
                    id: d.id.as_str().to_string(),
                    told: d.told,
                })
                .collect(),
        }
    }
}

/// An edge list, empty when the job went since its record was read
/// (`NOJOB`).
fn gone_is_none<E>(read: echomq::Result<Vec<E>>) -> echomq::Result<Vec<E>> {
    match read {
        Err(err)
            if err
                .refused()
                .is_some_and(|r| r.reason == echomq::Refusal::NoJob) =>
        {
            Ok(Vec::new())
        }
        other => other,
    }
}
