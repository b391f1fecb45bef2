//! `emq groups` and `emq group`: a queue's groups a page at a time (as
//! `emq jobs` pages), and one group's cap, rate limit and pause
//! (`docs/groups.md`).

use super::flow::{describe_cap, describe_limit};
use super::paging::Paging;
use super::{open, out, out_json};
use crate::cli::{Global, GroupArgs, GroupsArgs};
use crate::error::CliError;
use crate::table::{Align, Table};
use crate::time::format_duration;
use echomq::GroupCounts;
use serde_json::json;

/// Groups read per call while `emq groups` walks the listing.
const WALK: u64 = 1000;

/// `emq groups <queue> [--page N] [--per-page M]`: every group is read
/// (by name, [`WALK`] a call) to count them, then one page is shown.
pub(crate) async fn list(args: &GroupsArgs, global: &Global) -> Result<(), CliError> {
    let queue = open(&args.queue, global).await?;
    let admin = queue.admin();
    let mut all: Vec<GroupCounts> = Vec::new();
    loop {
        let after = all.last().map(|group| group.group.as_str());
        let read = admin.groups(after, WALK).await?;
        let done = (read.len() as u64) < WALK;
        all.extend(read);
        if done {
            break;
        }
    }
    let paging = Paging {
        page: args.page,
        per_page: args.per_page,
        total: all.len() as u64,
    };
    let from = Paging::offset(args.page, args.per_page) as usize;
    let page: Vec<GroupCounts> = all
        .into_iter()
        .skip(from)
        .take(args.per_page as usize)
        .collect();
    if global.json {
        return out_json(&json!({
            "queue": queue.name().as_str(),
            "page": args.page,
            "per_page": args.per_page,
            "pages": paging.pages(),
            "total": paging.total,
            "groups": page,
        }));
    }
    if paging.note_past_the_end(&format!("queue {}'s groups", queue.name())) {
        return Ok(());
    }
    if page.is_empty() {
        return out(&format!("queue {}: no groups\n", queue.name()));
    }
    let mut table = Table::new([
        Align::Left,
        Align::Right,
        Align::Right,
        Align::Left,
        Align::Right,
        Align::Left,
    ]);
    table.row(["group", "pending", "active", "paused", "cap", "rate limit"]);
    for group in &page {
        table.row([
            group.group.clone(),
            group.pending.to_string(),
            group.active.to_string(),
            if group.paused { "yes" } else { "no" }.to_string(),
            cap_cell(group),
            limit_cell(group),
        ]);
    }
    out(&format!("{table}{}", paging.footer("group", "groups")))
}

/// `emq group <queue> <group> [--concurrency-cap N | --no-concurrency-cap] [--max
/// N --per D | --no-rate-limit] [--off] [--pause | --resume]`: the changes in
/// that order (`--off` is `--no-concurrency-cap --no-rate-limit`, as the queue's
/// `--off` removes its flow setting whole), then the group as it is.
pub(crate) async fn one(args: &GroupArgs, global: &Global) -> Result<(), CliError> {
    let queue = open(&args.queue, global).await?;
    let group = queue
        .admin()
        .group(args.group.as_str())
        .map_err(|err| CliError::usage(format!("group {:?}: {err}", args.group)))?;
    match (args.concurrency_cap, args.off || args.no_concurrency_cap) {
        (Some(max), _) => drop(group.set_concurrency_cap(max).await?),
        (None, true) => drop(group.clear_concurrency_cap().await?),
        (None, false) => {}
    }
    match (args.max, args.per, args.off || args.no_rate_limit) {
        (Some(max), Some(per), _) => drop(group.set_rate_limit(max, per).await?),
        (_, _, true) => drop(group.clear_rate_limit().await?),
        _ => {}
    }
    if args.pause {
        group.pause().await?;
    }
    if args.resume {
        group.resume().await?;
    }
    let (counts, cap, limit) = (
        group.counts().await?,
        group.concurrency_cap().await?,
        group.rate_limit().await?,
    );
    if global.json {
        return out_json(&json!({
            "queue": queue.name().as_str(),
            "group": counts,
            "concurrency": cap,
            "rate_limit": limit,
        }));
    }
    out(&format!(
        "queue {} group {}: {} pending, {} active{}\n  cap: {}\n  rate limit: {}\n",
        queue.name(),
        counts.group,
        counts.pending,
        counts.active,
        if counts.paused { ", paused" } else { "" },
        describe_cap(&cap),
        describe_limit(&limit),
    ))
}

fn cap_cell(group: &GroupCounts) -> String {
    match group.concurrency {
        0 => "-".into(),
        n => n.to_string(),
    }
}

fn limit_cell(group: &GroupCounts) -> String {
    match group.limit_max {
        0 => "-".into(),
        max => format!("{max} per {}", format_duration(group.limit_per)),
    }
}
