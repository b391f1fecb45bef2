//! The `emq` binary against real servers, one test program: each module
//! was its own program before issue 39 (every program links the whole
//! dependency tree; one is faster to build and smaller in target/). The
//! browser tests are the crate's other program, `tests/dashboard_browser/`.
//!
//! Run one former program with a filter on its module, e.g.
//! `cargo test -p emq --test cli -- readme::`.

#[path = "../common/mod.rs"]
mod common;

mod bench;
mod bulk;
mod cli;
mod cluster;
mod controls;
mod dashboard;
mod dedup;
mod durability;
mod exec_result;
mod flow;
mod flow_chaos;
mod flow_show;
mod flows;
mod groups;
mod job_logs;
mod lifo;
mod metrics;
mod outcome_wait;
mod queues;
mod readme;
mod readme_schedule;
mod retention;
mod rows;
mod serve;
mod serve_burst;
mod serve_limits;
mod server;
mod tenants;
mod time;
mod timed;
mod token;
mod top_level;
mod watch;
mod watch_filters;
mod wire6;
mod worker;
