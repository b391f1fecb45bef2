//! `emq acl`: the `ACL SETUSER` line of a user limited to one queue (or to
//! a prefix) and to what its role sends, from `echomq::acl::rules`, the
//! waits `--durability` sends (`durability_commands`), and for a worker
//! whose flows reach other queues (`--flow-queues`) the selector of
//! `flow_reach_rule`. Needs no server.

use super::{out, out_json};
use crate::cli::{AclArgs, Global};
use crate::error::CliError;
use echomq::acl::{Reach, Role, commands, durability_commands, flow_reach_rule, rules};
use serde::Serialize;

/// `emq acl --json`.
#[derive(Debug, Serialize)]
struct Rules {
    user: String,
    role: &'static str,
    wire: &'static str,
    /// The rules after `ACL SETUSER <user> on >password`.
    rules: String,
    /// The commands granted, lower case.
    commands: Vec<String>,
    /// The other queues a worker's flows reach (`--flow-queues`), and the
    /// commands granted there only.
    #[serde(skip_serializing_if = "Option::is_none")]
    flow_queues: Option<FlowQueues>,
}

/// `--flow-queues` under `--json`.
#[derive(Debug, Serialize)]
struct FlowQueues {
    queues: Vec<String>,
    commands: Vec<String>,
}

/// `emq acl <role> [--queue Q] [--user NAME] [--flow-queues Q,…]`.
pub(crate) async fn run(args: &AclArgs, global: &Global) -> Result<(), CliError> {
    let reach = match &args.queue {
        Some(queue) => Reach::Queue(queue.clone()),
        None => Reach::Prefix,
    };
    let (role, wire) = (args.role.role(), global.wire.wire());
    check_flow_queues(args, role)?;
    let mut rules = rules(&global.prefix, &reach, role, wire)
        .map_err(|err| CliError::usage(format!("--queue or --prefix: {err}")))?;
    // The waits of `--durability`, when it asks for more than memory.
    let waits = durability_commands(global.durability);
    for wait in waits {
        rules.push_str(&format!(" +{wait}"));
    }
    let reach_rule = flow_reach_rule(&global.prefix, &args.flow_queues, wire)
        .map_err(|err| CliError::usage(format!("--flow-queues: {err}")))?;
    if !reach_rule.is_empty() {
        rules.push_str(&format!(" {reach_rule}"));
    }
    if global.json {
        let mut commands = commands(role, wire);
        commands.extend(waits.iter().map(|wait| wait.to_string()));
        commands.sort();
        return out_json(&Rules {
            user: args.user.clone(),
            role: role.name(),
            wire: global.wire.as_str(),
            rules,
            commands,
            flow_queues: (!args.flow_queues.is_empty()).then(|| FlowQueues {
                queues: args.flow_queues.clone(),
                commands: echomq::acl::flow_reach_commands(wire),
            }),
        });
    }
    out(&format!("ACL SETUSER {} on >PASSWORD {rules}\n", args.user))
}

/// `--flow-queues` is a worker's, limited to one queue (a prefix reach
/// has every queue already).
fn check_flow_queues(args: &AclArgs, role: Role) -> Result<(), CliError> {
    if args.flow_queues.is_empty() {
        return Ok(());
    }
    if role != Role::Worker {
        return Err(CliError::usage(format!(
            "--flow-queues is for the worker role (its relay and check-up), not {}",
            role.name()
        )));
    }
    if args.queue.is_none() {
        return Err(CliError::usage(
            "--flow-queues needs --queue: without it the user reaches every queue of the prefix already",
        ));
    }
    Ok(())
}
