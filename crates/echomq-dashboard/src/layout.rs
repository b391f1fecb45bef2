//! The page shell (head, navigation, one stylesheet, vendored scripts) and
//! the small pieces every page draws: action buttons, times, ages,
//! cadences, links.

use crate::caller::{self, CSRF_FIELD};
use crate::state::App;
use echomq::RepeatDefinition;
use echomq::protocol::cadence::Cadence;
use maud::{DOCTYPE, Markup, html};

/// Which item of the navigation a page is under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nav {
    Queues,
    Controls,
}

/// A whole page: head, navigation, `body`.
pub(crate) fn page(app: &App, title: &str, nav: Option<Nav>, body: Markup) -> Markup {
    shell(
        app,
        title,
        html! {
            header.top {
                a.brand href=(app.href("/")) { "EchoMQ" }
                nav {
                    a href=(app.href("/")) aria-current=[(nav == Some(Nav::Queues)).then_some("page")] { "Queues" }
                    a href=(app.href("/controls")) aria-current=[(nav == Some(Nav::Controls)).then_some("page")] { "Controls" }
                    a href=(app.href("/metrics")) { "Metrics" }
                }
                span.mode {
                    @if app.read_only { span.badge.read-only title="every action is refused" { "read-only" } }
                    @if app.tokens.is_some() {
                        @if let Some((name, role)) = caller::with_grant(|g| g.map(|g| (g.name.clone(), g.role.name()))) {
                            span.who title=(format!("signed in as {name}, {role}")) { (name) " · " (role) } " "
                        }
                        form.inline method="post" action=(app.href("/logout")) {
                            (csrf())
                            button.link type="submit" { "Sign out" }
                        }
                    }
                }
            }
            main { (body) }
        },
    )
}

/// A page without navigation (the login form).
pub(crate) fn bare(app: &App, title: &str, body: Markup) -> Markup {
    shell(app, title, html! { main.narrow { (body) } })
}

fn shell(app: &App, title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                // htmx would add a <style> the content security policy refuses.
                meta name="htmx-config" content=r#"{"includeIndicatorStyles":false}"#;
                title { (title) " · EchoMQ" }
                link rel="stylesheet" href=(app.href("/assets/style.css"));
                script src=(app.href("/assets/htmx.min.js")) defer {}
                script src=(app.href("/assets/sse.min.js")) defer {}
            }
            body { (body) }
        }
    }
}

/// The hidden CSRF field of a form: the token of the session the page is
/// drawn for.
pub(crate) fn csrf() -> Markup {
    html! { input type="hidden" name=(CSRF_FIELD) value=(caller::csrf()); }
}

/// The notice an action left for this session's page (`?done=` names it
/// by id); nothing for an id the session was not given.
pub(crate) fn notice(app: &App, done: Option<&str>) -> Markup {
    let text = done.zip(caller::current()).and_then(|(done, caller)| {
        let session = caller.session?;
        app.sessions.notice(&session.id, done)
    });
    html! { @if let Some(text) = text { p.notice role="status" { (text) } } }
}

/// A button that POSTs to `action` (no fields but the CSRF token); its
/// caller draws it only where the request may act (`permit.rs`). Its form
/// is marked `data-action` with the action's last path segment (`pause`,
/// `reprocess`, …).
pub(crate) fn button(action: &str, label: &str, class: &str) -> Markup {
    let verb = action.rsplit('/').next().unwrap_or(action);
    html! {
        form.inline method="post" action=(action) data-action=(verb) {
            (csrf())
            button class=(class) type="submit" { (label) }
        }
    }
}

/// `ms` since the epoch as UTC, to the second.
pub(crate) fn time(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map_or_else(
            || ms.to_string(),
            |at| at.format("%Y-%m-%d %H:%M:%S").to_string(),
        )
}

/// A span of `ms` as its largest unit or two: `850 ms`, `12 s`, `3 m 20 s`,
/// `5 h 2 m`, `2 d 4 h`.
pub(crate) fn span(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        _ if ms < 1000 => format!("{ms} ms"),
        0..60 => format!("{s} s"),
        60..3600 => two(s / 60, "m", s % 60, "s"),
        3600..86400 => two(s / 3600, "h", s % 3600 / 60, "m"),
        _ => two(s / 86400, "d", s % 86400 / 3600, "h"),
    }
}

/// A cadence for people: `every 1 m`, `cron 0 * * * * UTC`.
pub(crate) fn cadence(definition: &RepeatDefinition) -> String {
    match &definition.schedule.cadence {
        Cadence::Every { interval_ms, .. } => format!("every {}", span(*interval_ms)),
        Cadence::Cron {
            expression,
            timezone,
        } => format!("cron {expression} ({timezone})"),
    }
}

/// `5 h 2 m`, or `5 h` when the smaller unit is 0.
fn two(big: u64, big_unit: &str, small: u64, small_unit: &str) -> String {
    if small == 0 {
        format!("{big} {big_unit}")
    } else {
        format!("{big} {big_unit} {small} {small_unit}")
    }
}

/// `text` percent-encoded for one path segment or query value: everything
/// but unreserved characters.
pub(crate) fn enc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The page of queue `queue`.
pub(crate) fn queue_href(app: &App, queue: &str) -> String {
    app.href(&format!("/queues/{}", enc(queue)))
}

/// The page of job `id` of queue `queue`.
pub(crate) fn job_href(app: &App, queue: &str, id: &str) -> String {
    app.href(&format!("/queues/{}/jobs/{}", enc(queue), enc(id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_in_their_largest_units() {
        assert_eq!(span(850), "850 ms");
        assert_eq!(span(12_000), "12 s");
        assert_eq!(span(200_000), "3 m 20 s");
        assert_eq!(span(5 * 3_600_000 + 120_000), "5 h 2 m");
        assert_eq!(span(2 * 86_400_000 + 4 * 3_600_000), "2 d 4 h");
        assert_eq!(span(60_000), "1 m");
        assert_eq!(span(3_600_000), "1 h");
    }

    #[test]
    fn times_are_utc_to_the_second() {
        assert_eq!(time(0), "1970-01-01 00:00:00");
        assert_eq!(time(1_796_196_182_123), "2026-12-02 07:23:02");
    }

    #[test]
    fn encoding_keeps_only_unreserved_characters() {
        assert_eq!(enc("a b/c?d#e%"), "a%20b%2Fc%3Fd%23e%25");
        assert_eq!(enc("job-1_x.y~"), "job-1_x.y~");
    }
}
