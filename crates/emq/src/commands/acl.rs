//! `emq acl`: the `ACL SETUSER` line of a user limited to one queue (or to
//! a prefix) and to what its role sends, from `echomq::acl::rules`, and
//! the waits `--durability` sends (`durability_commands`). Needs no server.

use super::{out, out_json};
use crate::cli::{AclArgs, Global};
use crate::error::CliError;
use echomq::acl::{Reach, commands, durability_commands, rules};
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
}

/// `emq acl <role> [--queue Q] [--user NAME]`.
pub(crate) async fn run(args: &AclArgs, global: &Global) -> Result<(), CliError> {
    let reach = match &args.queue {
        Some(queue) => Reach::Queue(queue.clone()),
        None => Reach::Prefix,
    };
    let (role, wire) = (args.role.role(), global.wire.wire());
    let mut rules = rules(&global.prefix, &reach, role, wire)
        .map_err(|err| CliError::usage(format!("--queue or --prefix: {err}")))?;
    // The waits of `--durability`, when it asks for more than memory.
    let waits = durability_commands(global.durability);
    for wait in waits {
        rules.push_str(&format!(" +{wait}"));
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
        });
    }
    out(&format!("ACL SETUSER {} on >PASSWORD {rules}\n", args.user))
}
