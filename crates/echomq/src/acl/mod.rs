//! Tenants behind ACL users: what a user of each role needs ([`rules`]),
//! and what the server's ACL refused — a `NOPERM` reply, or a script's
//! command refused inside it — read into [`Denied`], so the error names the
//! user, the key, channel or command, and the queue.

mod rules;

pub use rules::{
    FLOW_REACH_VERBS, Reach, Role, commands, durability_commands, flow_reach_commands,
    flow_reach_rule, rules,
};

use crate::error::Error;

/// What the server's ACL refused the connection's user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// A key (for a queue, its base key: every key of a queue shares it
    /// as a prefix, so one pattern grants them all).
    Key(String),
    /// A pub/sub channel (the queue's cancel channel).
    Channel(String),
    /// A command the user may not run (`hmget`, `emq.claim`, `info`).
    Command(String),
    /// A command a script calls, which the server did not name (Redis 7.0
    /// says only that the script's user "can't run this command"; its
    /// `ACL LOG` names it).
    ScriptCommand,
}

impl Denied {
    /// The rule that would grant it: `~emq:{q}*` (a queue's base key: all
    /// its keys), `~emq:queues`, `&emq:{q}:cancel`, `+hmget`.
    pub fn rule(&self) -> String {
        match self {
            // A queue's base key grants every key of the queue as a prefix.
            Denied::Key(key) if key.ends_with('}') => format!("~{key}*"),
            Denied::Key(key) => format!("~{key}"),
            Denied::Channel(channel) => format!("&{channel}"),
            Denied::Command(command) => format!("+{command}"),
            Denied::ScriptCommand => "+<the command ACL LOG names>".into(),
        }
    }
}

impl std::fmt::Display for Denied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Denied::Key(key) => write!(f, "access to the key {key}"),
            Denied::Channel(channel) => write!(f, "access to the channel {channel}"),
            Denied::Command(command) => write!(f, "the command {command}"),
            Denied::ScriptCommand => f.write_str("a command the queue's script calls"),
        }
    }
}

/// How Redis 7.0 refuses a command inside a script, without naming it.
const SCRIPT_REFUSAL_7_0: &str = "user executing the script can't run this command";

/// Whether `err` is the server's ACL refusing a key, a channel or a
/// command: a `NOPERM` reply, or a script's `redis.call` refused by it.
pub(crate) fn is_acl_refusal(err: &redis::RedisError) -> bool {
    let text = err.to_string();
    err.code() == Some("NOPERM")
        || text.contains("ACL failure in script")
        || text.contains(SCRIPT_REFUSAL_7_0)
}

/// What a refusal (the reply's text) refused, with `key` (or `channel`,
/// for a subscription) what the call was about: a command named in the
/// reply, else a channel when the reply says so, else `key`.
fn denied(text: &str, key: &str, channel: Option<&str>) -> Denied {
    if let Some(command) = refused_command(text) {
        return Denied::Command(command);
    }
    if text.contains(SCRIPT_REFUSAL_7_0) {
        return Denied::ScriptCommand;
    }
    match channel {
        Some(channel) if text.contains("channel") => Denied::Channel(channel.to_string()),
        _ => Denied::Key(key.to_string()),
    }
}

/// The command a refusal names: `… no permissions to run the 'hmget' command`.
fn refused_command(text: &str) -> Option<String> {
    let (_, rest) = text.split_once("permissions to run the '")?;
    let (command, _) = rest.split_once('\'')?;
    Some(command.to_string())
}

/// Where a refused call was aimed: the user it ran as, the key (or
/// channel) it was about, and the queue.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    pub user: &'a str,
    pub key: &'a str,
    pub channel: Option<&'a str>,
    pub queue: Option<&'a str>,
}

impl Target<'_> {
    /// `err` as [`Error::NotPermitted`] when the server's ACL refused it;
    /// any other error as it is.
    pub(crate) fn refusal(self, err: redis::RedisError) -> Error {
        if !is_acl_refusal(&err) {
            return Error::Redis(err);
        }
        self.not_permitted(err.to_string())
    }

    /// [`Error::NotPermitted`] for the refusal whose reply is `detail`.
    fn not_permitted(self, detail: String) -> Error {
        Error::NotPermitted {
            user: self.user.to_string(),
            denied: denied(&detail, self.key, self.channel),
            queue: self.queue.map(str::to_string),
            detail,
        }
    }

    /// The cancel subscription's failure (its own socket's error, whose
    /// text carries the server's reply) as [`Error::NotPermitted`] naming
    /// the channel, when the server's ACL refused it.
    pub(crate) fn subscription_refusal(self, err: &std::io::Error) -> Option<Error> {
        let text = err.to_string();
        text.contains("NOPERM").then(|| self.not_permitted(text))
    }

    /// [`Target::refusal`] over an [`Error`]: only its `Redis` variant can
    /// be an ACL refusal.
    pub(crate) fn map(self, err: Error) -> Error {
        match err {
            Error::Redis(err) => self.refusal(err),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_error(text: &str) -> redis::RedisError {
        redis::RedisError::from((redis::ErrorKind::Client, "server", text.to_string()))
    }

    #[test]
    fn a_refused_command_inside_a_script_names_the_command() {
        let err = server_error(
            "ACL failure in script: User min has no permissions to run the 'hmget' command",
        );
        assert!(is_acl_refusal(&err));
        assert_eq!(
            denied(&err.to_string(), "emq:{a}", None),
            Denied::Command("hmget".into())
        );
    }

    #[test]
    fn a_refused_channel_names_the_channel_and_a_key_the_key() {
        let err = server_error("NOPERM No permissions to access a channel");
        assert_eq!(
            denied(&err.to_string(), "emq:{a}", Some("emq:{a}:cancel")),
            Denied::Channel("emq:{a}:cancel".into())
        );
        let err = server_error("NOPERM No permissions to access a key");
        assert_eq!(
            denied(&err.to_string(), "emq:{a}", None),
            Denied::Key("emq:{a}".into())
        );
    }

    #[test]
    fn redis_7_0s_refusal_inside_a_script_is_a_script_command() {
        let err =
            server_error("The user executing the script can't run this command or subcommand");
        assert!(is_acl_refusal(&err));
        assert_eq!(
            denied(&err.to_string(), "emq:{a}", None),
            Denied::ScriptCommand
        );
    }

    #[test]
    fn rules_grant_what_was_denied() {
        assert_eq!(Denied::Key("emq:{a}".into()).rule(), "~emq:{a}*");
        assert_eq!(Denied::Key("emq:queues".into()).rule(), "~emq:queues");
        assert_eq!(
            Denied::Channel("emq:{a}:cancel".into()).rule(),
            "&emq:{a}:cancel"
        );
        assert_eq!(Denied::Command("hmget".into()).rule(), "+hmget");
    }

    #[test]
    fn other_errors_are_not_acl_refusals() {
        assert!(!is_acl_refusal(&server_error(
            "WRONGTYPE Operation against a key"
        )));
    }
}
