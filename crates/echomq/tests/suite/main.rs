//! The client's integration tests, one program: a module per feature, so
//! the dependency tree is linked once, not once per feature. Each module's
//! own header says what it covers and on which wires and servers.
//! `tests/otel.rs` is the one other program: it installs a process-global
//! tracer provider, which would trace every other module's enqueues.
//!
//! `scripts/test` runs every module here again against Redis 7.0 (its
//! cluster tests skipped), unless the module's file has a line starting
//! `//! Not on Redis 7.0:` that says why not.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod arguments;
mod blocked;
mod claim_tail;
mod claim_wait;
mod complete_many;
mod concurrency;
mod control_characters;
mod control_functions;
mod dedup;
mod durability;
mod failover_chaos;
mod flow;
mod flow_add;
mod flow_blocked;
mod flow_checkup;
mod flow_fan_in;
mod flow_graph;
mod flow_lifo_dependent;
mod flow_own_queue;
mod flow_relay;
mod flow_resolve;
mod flow_sentinel;
mod flow_settle;
mod flow_spawn;
mod flow_submit;
mod flow_wait;
mod flows_example;
mod groups;
mod in_hand;
mod library;
mod lifo;
mod logs_mark;
mod metrics;
mod operator;
mod outbox;
mod outcome_awaited;
mod outcome_channel;
mod outcome_cluster;
mod outcome_crowd;
mod outcome_now;
mod outcome_race;
mod outcome_resend;
mod outcome_sentinel;
mod outcome_wait;
mod prometheus;
mod quickstart;
mod reconnect;
mod registry;
mod repeat;
mod report_server;
mod retention;
mod search;
mod spine;
mod tenants;
mod time;
mod timed;
mod traces;
mod transport;
mod wire6;
mod worker;
mod worker_metrics;
mod worker_over;
