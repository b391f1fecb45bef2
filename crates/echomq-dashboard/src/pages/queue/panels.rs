//! The queue page's panels: the queue's buttons, its metrics charts, its
//! repeat definitions, groups, limits and retention, and drain and
//! obliterate behind a typed confirmation.

use super::{act, post};
use crate::chart::{self, Series};
use crate::layout;
use crate::permit;
use crate::state::App;
use echomq::{
    ConcurrencyCap, GroupCounts, Histogram, QueueMetrics, RateLimit, RepeatDefinition, Retention,
};
use maud::{Markup, html};

/// Pause or resume, and promote the due scheduled jobs.
pub(super) fn queue_buttons(app: &App, name: &str, paused: bool) -> Markup {
    html! {
        @if paused { (post(app, name, "resume", &[], "Resume", "")) }
        @else { (post(app, name, "pause", &[], "Pause", "")) }
        " "
        (post(app, name, "promote-due", &[], "Promote due", ""))
    }
}

/// Throughput per window, and wait and run time percentiles.
pub(super) fn metrics(metrics: &QueueMetrics) -> Markup {
    let per = layout::span(metrics.width.as_millis() as u64);
    let count = |f: fn(&echomq::MetricsWindow) -> u64| {
        metrics.windows.iter().map(|w| Some(f(w) as f64)).collect()
    };
    let percentiles = |h: fn(&echomq::MetricsWindow) -> &Histogram| {
        [(0.5, "p50"), (0.95, "p95"), (0.99, "p99")].map(|(q, label)| Series {
            class: label,
            label,
            points: metrics
                .windows
                .iter()
                .map(|w| h(w).quantile(q).map(|d| d.as_secs_f64() * 1000.0))
                .collect(),
        })
    };
    let summary = metrics.summary();
    html! {
        section.panel id="metrics" {
            h2 { "Metrics" span.muted { " · last hour, per " (per) } }
            p.muted {
                (summary.completed) " completed, " (summary.failed) " failed, " (summary.dead) " dead, "
                (summary.cancelled) " cancelled"
            }
            div.grid {
                (chart::lines(&format!("Throughput per {per}"), "jobs", &[
                    Series { class: "completed", label: "completed", points: count(|w| w.completed) },
                    Series { class: "failed", label: "failed", points: count(|w| w.failed) },
                    Series { class: "dead", label: "dead", points: count(|w| w.dead) },
                ]))
                (chart::lines("Wait time", "ms", &percentiles(|w| &w.wait)))
                (chart::lines("Run time", "ms", &percentiles(|w| &w.run)))
            }
        }
    }
}

/// The repeat definitions, a remove button each, and the form that adds
/// one.
pub(super) fn repeats(app: &App, name: &str, repeats: &[RepeatDefinition]) -> Markup {
    html! {
        section.panel id="repeats" {
            h2 { "Repeats" }
            @if repeats.is_empty() { p.muted { "No repeat definition." } }
            @else {
                div.scroll { table {
                    thead { tr { th { "Key" } th { "Cadence" } th { "Payload" } th { "" } } }
                    tbody {
                        @for r in repeats {
                            tr data-repeat=(r.key) {
                                td { code { (r.key) } }
                                td { (layout::cadence(r)) }
                                td.wrap { code { (r.payload.to_string()) } }
                                td { (post(app, name, "repeat-remove", &[("key", &r.key)], "Remove", "danger")) }
                            }
                        }
                    }
                } }
            }
            @if permit::may_queue(app, name, "repeat-add") {
                form id="repeat-add" method="post" action=(act(app, name, "repeat-add")) {
                    (layout::csrf())
                    label { "Key " input name="key" required; } " "
                    label { "Every (ms) " input name="every_ms" inputmode="numeric"; } " "
                    label { "or cron " input name="cron" placeholder="0 */5 * * * *"; } " "
                    label { "Payload (JSON) " input name="payload" value="{}"; } " "
                    button type="submit" { "Add repeat" }
                }
            }
        }
    }
}

/// The queue's groups with their counts and limits; pause and resume each.
pub(super) fn groups(app: &App, name: &str, groups: &[GroupCounts], shown: u64) -> Markup {
    html! {
        section.panel id="groups" {
            h2 { "Groups" }
            @if groups.is_empty() { p.muted { "No group." } }
            @else {
                div.scroll { table {
                    thead { tr { th { "Group" } th.num { "Pending" } th.num { "Active" } th { "Limits" } th { "" } } }
                    tbody {
                        @for g in groups {
                            tr data-group=(g.group) {
                                td { code { (g.group) } @if g.paused { " " span.paused.badge { "paused" } } }
                                td.num { (g.pending) }
                                td.num { (g.active) }
                                td {
                                    @if g.limit_max > 0 { (g.limit_max) " / " (layout::span(g.limit_per.as_millis() as u64)) " " }
                                    @if g.concurrency > 0 { "≤" (g.concurrency) " active" }
                                    @if g.limit_max == 0 && g.concurrency == 0 { span.muted { "—" } }
                                }
                                td {
                                    @if g.paused { (post(app, name, "group-resume", &[("group", &g.group)], "Resume", "")) }
                                    @else { (post(app, name, "group-pause", &[("group", &g.group)], "Pause", "")) }
                                }
                            }
                        }
                    }
                } }
                @if groups.len() as u64 >= shown { p.muted { "The first " (shown) " groups." } }
            }
        }
    }
}

/// The rate limit and the cap on active jobs, with forms to set and clear
/// them.
pub(super) fn limits(app: &App, name: &str, rate: &RateLimit, cap: &ConcurrencyCap) -> Markup {
    html! {
        section.panel id="limits" {
            h2 { "Limits" }
            p id="rate-limit" {
                "Rate limit: "
                @if rate.is_set() {
                    "at most " (rate.max) " jobs start per " (layout::span(rate.per.as_millis() as u64))
                    span.muted { " (" (rate.used) " in this window)" } " "
                    (post(app, name, "limit-clear", &[], "Clear", ""))
                } @else { span.muted { "none" } }
            }
            @if permit::may_queue(app, name, "limit") {
                form.inline method="post" action=(act(app, name, "limit")) data-action="limit" {
                    (layout::csrf())
                    label { "Max " input name="max" inputmode="numeric" required; } " "
                    label { "per (ms) " input name="per_ms" inputmode="numeric" required; } " "
                    button type="submit" { "Set rate limit" }
                }
            }
            p id="concurrency" {
                "Concurrency: "
                @if cap.is_set() {
                    "at most " (cap.max) " active" span.muted { " (" (cap.active) " now)" } " "
                    (post(app, name, "concurrency-clear", &[], "Clear", ""))
                } @else { span.muted { "no cap" } }
            }
            @if permit::may_queue(app, name, "concurrency") {
                form.inline method="post" action=(act(app, name, "concurrency")) data-action="concurrency" {
                    (layout::csrf())
                    label { "Max active " input name="max" inputmode="numeric" required; } " "
                    button type="submit" { "Set cap" }
                }
            }
        }
    }
}

/// How many finished jobs each finished set keeps and for how long
/// (`RETENTION`; `emq retention` changes them).
pub(super) fn retention(retention: &Retention) -> Markup {
    let sets = [
        ("completed", retention.completed, retention.completed_for),
        ("dead", retention.dead, retention.dead_for),
        ("cancelled", retention.cancelled, retention.cancelled_for),
    ];
    html! {
        section.panel id="retention" {
            h2 { "Retention" }
            p.muted { "Finished jobs kept, the newest first; the rest are deleted as jobs finish and by the stalled sweep." }
            table {
                thead { tr { th { "state" } th { "keeps" } th { "each for at most" } } }
                tbody {
                    @for (set, count, age) in sets {
                        tr data-retention=(set) {
                            td { (set) }
                            td { @if count == 0 { "none" } @else { "the newest " (count) } }
                            td {
                                @match age {
                                    Some(age) => (layout::span(age.as_millis() as u64)),
                                    None => span.muted { "no age limit" },
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Drain and obliterate, each behind the queue's name typed again.
pub(super) fn danger(app: &App, name: &str) -> Markup {
    let (drain, obliterate) = (
        permit::may_queue(app, name, "drain"),
        permit::may_queue(app, name, "obliterate"),
    );
    if !drain && !obliterate {
        return html! {};
    }
    html! {
        section.panel id="danger" {
            h2 { "Drain and obliterate" }
            @if drain { form id="drain" method="post" action=(act(app, name, "drain")) {
                (layout::csrf())
                p { "Drain deletes every pending job (and every scheduled or blocked one, if ticked); running and finished jobs stay." }
                label { input type="checkbox" name="scheduled" value="1"; " scheduled too" } " "
                label { input type="checkbox" name="blocked" value="1"; " blocked too" } " "
                label { "Type the queue name to confirm " input name="confirm" autocomplete="off" required; } " "
                button.danger type="submit" { "Drain" }
            } }
            @if obliterate { form id="obliterate" method="post" action=(act(app, name, "obliterate")) {
                (layout::csrf())
                p { "Obliterate deletes the whole queue, every job and key. Pause it first." }
                label { input type="checkbox" name="force" value="1"; " even with active jobs (their holders are told to stop)" } " "
                label { "Type the queue name to confirm " input name="confirm" autocomplete="off" required; } " "
                button.danger type="submit" { "Obliterate" }
            } }
        }
    }
}
