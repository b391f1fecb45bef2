//! What the library logs (`tracing`), on stderr in the CLI's own line
//! format: `warning: claim failed; retrying: <error> (queue=mail)` — no
//! timestamp, no module path, no colours — so that a command's stderr
//! (`emq worker`'s above all) reads as one kind of line.
//!
//! Without `RUST_LOG`: warnings and errors, in that format, except the
//! event the CLI reports itself as its exit error (a worker stopped by the
//! server's ACL: its `emq: the worker stopped: …` line says it once). With
//! `RUST_LOG`: tracing's own format, filtered as it says, every event
//! kept (for debugging).

use crate::terminal::escape;
use std::fmt::{self, Write as _};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The default filter: warnings and errors, but not the library's event of
/// a worker stopped by the ACL, which the CLI reports as its exit error.
const DEFAULT_FILTER: &str = "warn,echomq::worker::failure=off";

/// Installs the logger on stderr (see the module's doc).
pub(crate) fn init() {
    let stderr = std::io::stderr;
    let _ = match tracing_subscriber::EnvFilter::try_from_default_env() {
        Ok(filter) => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        Err(_) => tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(DEFAULT_FILTER))
            .with_writer(stderr)
            .event_format(PlainLine)
            .try_init(),
    };
}

/// One event as one line: `<level>: <message>[: <error>][ (name=value, …)]`.
struct PlainLine;

impl<S, N> FormatEvent<S, N> for PlainLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        writeln!(
            writer,
            "{}",
            escape(&fields.line(*event.metadata().level()))
        )
    }
}

/// An event's message, its `error` field and its other fields, as text.
#[derive(Debug, Default)]
struct Fields {
    message: String,
    error: Option<String>,
    others: Vec<(&'static str, String)>,
}

impl Fields {
    fn line(&self, level: Level) -> String {
        let level = match level {
            Level::ERROR => "error",
            Level::WARN => "warning",
            Level::INFO => "info",
            Level::DEBUG => "debug",
            Level::TRACE => "trace",
        };
        let mut line = format!("{level}: {}", self.message);
        if let Some(error) = &self.error {
            let _ = write!(line, ": {error}");
        }
        let others: Vec<String> = self
            .others
            .iter()
            .filter(|(_, value)| !value.is_empty())
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        if !others.is_empty() {
            let _ = write!(line, " ({})", others.join(", "));
        }
        line
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.keep(field, value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.keep(field, format!("{value:?}"));
    }
}

impl Fields {
    fn keep(&mut self, field: &Field, value: String) {
        // One line whatever a value holds.
        let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
        match field.name() {
            "message" => self.message = value,
            "error" => self.error = Some(value),
            name => self.others.push((name, value)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_reads_as_one_plain_line() {
        let fields = Fields {
            message: "claim failed; retrying".into(),
            error: Some("server: connection refused".into()),
            others: vec![("queue", "mail".into()), ("node", String::new())],
        };
        assert_eq!(
            fields.line(Level::WARN),
            "warning: claim failed; retrying: server: connection refused (queue=mail)"
        );
    }
}
