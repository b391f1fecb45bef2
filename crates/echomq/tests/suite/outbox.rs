//! The decision side of flows (docs/protocol.md, "Deciding a job that has
//! dependents"): a command that decides or deletes a job with dependents
//! not told yet writes its resolution to the outbox, and COMPLETE, FAIL
//! and CANCEL say so with a `relay_*` word. Until `FLOW.ADD` lands, a job
//! with dependents is set up raw (its `dependents:<id>`, its `dependents`
//! field, the queue's `flows` mark). Each case runs on a server (wire 4)
//! and again on wire 6 (the native module).

#[path = "outbox/cases.rs"]
mod cases;
#[path = "outbox/commands.rs"]
mod commands;
use crate::common;
