//! Arguments of groups: `groups` (a queue's groups, a page at a time) and
//! `group` (one group's cap, rate limit and pause).

use super::flow::parse_window;
use super::whole;
use clap::Args;
use std::time::Duration;

/// `emq groups`.
#[derive(Debug, Args)]
pub struct GroupsArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Page number, from 1 (groups by name). A page past the last one
    /// prints nothing but a note on stderr naming the last page (exit 0).
    #[arg(long, default_value_t = 1, value_parser = whole::at_least(1))]
    pub page: u64,
    /// Groups per page.
    #[arg(long, default_value_t = 20, value_parser = whole::between(1, 1000))]
    pub per_page: u64,
}

/// `emq group`.
#[derive(Debug, Args)]
pub struct GroupArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// The group (1–128 bytes, no whitespace, braces or control characters).
    #[arg(value_name = "group")]
    pub group: String,
    /// At most this many of the group's jobs active at once, across every
    /// worker.
    #[arg(long, alias = "concurrency", value_name = "N", value_parser = whole::at_least(1))]
    pub concurrency_cap: Option<u64>,
    /// Remove the group's flow control, its cap and its rate limit: what
    /// `emq concurrency-cap --off` and `emq rate-limit --off` remove on the queue.
    /// A pause stays (--resume lifts it).
    #[arg(long, conflicts_with_all = ["concurrency_cap", "no_concurrency_cap", "max", "per", "no_rate_limit"])]
    pub off: bool,
    /// Remove the group's cap on active jobs only.
    #[arg(long, alias = "no-concurrency", conflicts_with = "concurrency_cap")]
    pub no_concurrency_cap: bool,
    /// At most this many of the group's jobs start per --per, across every
    /// worker.
    #[arg(long, requires = "per", value_parser = whole::at_least(1))]
    pub max: Option<u64>,
    /// The window of --max (300ms, 1s, 1m; at least 1ms), aligned on the
    /// server's clock.
    #[arg(long, value_name = "duration", requires = "max", value_parser = parse_window, allow_hyphen_values = true)]
    pub per: Option<Duration>,
    /// Remove the group's rate limit only.
    #[arg(long, alias = "no-limit", conflicts_with_all = ["max", "per"])]
    pub no_rate_limit: bool,
    /// Hold the group's jobs back (running ones run on); the rest of the
    /// queue flows.
    #[arg(long, conflicts_with = "resume")]
    pub pause: bool,
    /// Let claims take the group's jobs again.
    #[arg(long)]
    pub resume: bool,
}
