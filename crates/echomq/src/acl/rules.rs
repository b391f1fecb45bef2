//! The least an ACL user needs, by role and wire: the commands a worker, a
//! producer or an operator sends, and the key and channel patterns of one
//! queue or of a whole prefix. Derived from the registry of controls (which
//! controls each role sends) and, on wire 4, from the scripts themselves
//! (the commands each script calls, which the server's ACL checks too).

use crate::scripts::script_source;
use crate::transport::dispatch::Wire;
use echomq_protocol::{Keyspace, NameError, QueueName, Transition};
use std::collections::BTreeSet;

/// What a user does with its queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Enqueues (and schedules) jobs, reads them back and waits for their
    /// outcomes.
    Producer,
    /// Runs a [`Worker`](crate::Worker): claims, outcomes, leases,
    /// cancellation, the stalled sweep, the repeat scheduler.
    Worker,
    /// Everything `emq` does: every control, and the reads behind `stats`,
    /// `jobs`, `job`, `watch`, `queues` and `repeat`.
    Operator,
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 3] = [Role::Producer, Role::Worker, Role::Operator];

    /// The role's name: `producer`, `worker`, `operator`.
    pub fn name(self) -> &'static str {
        match self {
            Role::Producer => "producer",
            Role::Worker => "worker",
            Role::Operator => "operator",
        }
    }

    /// Whether the role sends `transition`: the library functions the
    /// registry names for it belong to the role.
    pub fn sends(self, transition: Transition) -> bool {
        let functions = transition.control().functions;
        match self {
            // Enqueues (flows included), reads back what it enqueued and
            // waits for it.
            Role::Producer => functions.iter().any(|f| {
                f.starts_with("Queue::enqueue")
                    || *f == "Connector::submit"
                    || f.starts_with("Queue::outcome")
                    || *f == "Jobs::get"
            }),
            Role::Worker => functions.iter().any(|f| {
                ["Worker", "WorkerHandle", "JobContext", "RepeatScheduler"]
                    .iter()
                    .any(|ty| {
                        f.strip_prefix(ty)
                            .is_some_and(|rest| rest.starts_with("::"))
                    })
            }),
            Role::Operator => true,
        }
    }

    /// The commands the role sends besides its controls', on either wire:
    /// the connect's `PING` and `INFO` (its version and eviction checks;
    /// refused, they are skipped), and what the library reads and writes
    /// directly.
    fn direct_commands(self) -> &'static [&'static str] {
        match self {
            // The outcome channel (SSUBSCRIBE) of its waits.
            Role::Producer => &["ping", "info", "ssubscribe"],
            // The idle wait (BZPOPMIN on the signal key, ZADD to put a
            // marker back), the earliest run-at (TIME, ZRANGE), the sweep
            // guard (SET NX PX), the repeat definitions (HGETALL), whether
            // the queue or a group has a cap (HMGET of its meta), the
            // cancel channel (SSUBSCRIBE).
            Role::Worker => &[
                "ping",
                "info",
                "bzpopmin",
                "zadd",
                "time",
                "zrange",
                "set",
                "hgetall",
                "hmget",
                "ssubscribe",
            ],
            // The worker's, and the reads of stats, jobs, job, watch,
            // repeat and dedup (a key's holder and time: ZSCORE, HGET; the
            // keys held: HLEN, ZCOUNT), the pending jobs in `fifo` (LRANGE,
            // LLEN, LINDEX), the meta settings, the registry's removal and
            // the type check behind a WRONGTYPE.
            Role::Operator => &[
                "ping",
                "info",
                "bzpopmin",
                "zadd",
                "time",
                "zrange",
                "zcard",
                "zcount",
                "zscore",
                "hget",
                "hlen",
                "zscan",
                "set",
                "hgetall",
                "hset",
                "hdel",
                "lrange",
                "llen",
                "lindex",
                "xread",
                "xrevrange",
                "ssubscribe",
                "type",
                "srem",
            ],
        }
    }
}

/// The commands a durability level sends behind a write (docs/protocol.md,
/// Durability), for [`rules`]' users to be granted as well: none for
/// memory, `WAITAOF` for local, `WAIT` and `WAITAOF` for replicas. Apart
/// from [`commands`], since a server without `WAITAOF` (Redis 7.0) refuses
/// an ACL rule that names it: a user at `replicas:N` there needs `+wait`
/// alone.
pub fn durability_commands(level: crate::Durability) -> &'static [&'static str] {
    match level {
        crate::Durability::Memory => &[],
        crate::Durability::Local => &["waitaof"],
        crate::Durability::Replicas { .. } => &["wait", "waitaof"],
    }
}

/// Every command `role` sends on `wire`, lower case, sorted: on wire 4
/// `FCALL` (the library's functions), `EVALSHA`, `EVAL` and `SCRIPT LOAD`
/// (the scripts, where the library is not loaded: loading it takes
/// `FUNCTION LOAD`, which a tenant is not granted, since a user who may
/// load it may replace it under every other user's calls) and every
/// command the role's scripts call; on wire 6 the role's `EMQ.*` commands and
/// `EMQ.VERSION`; on both, the role's direct commands. The queue registry
/// (`SADD`, `SMEMBERS`) is not among them: it belongs to a prefix, see
/// [`rules`].
pub fn commands(role: Role, wire: Wire) -> Vec<String> {
    let mut out: BTreeSet<String> = role
        .direct_commands()
        .iter()
        .map(|c| c.to_string())
        .collect();
    let sent = Transition::ALL.iter().filter(|t| role.sends(**t));
    for transition in sent {
        for (form, command) in transition.control().commands() {
            match wire {
                Wire::Script => out.extend(script_calls(script_source(*transition, form))),
                Wire::Native => {
                    out.insert(command.native.to_ascii_lowercase());
                }
            }
        }
    }
    match wire {
        Wire::Script => out.extend(["fcall", "evalsha", "eval", "script|load"].map(String::from)),
        Wire::Native => {
            out.insert("emq.version".to_string());
        }
    }
    out.into_iter().collect()
}

/// The commands a script calls: every `redis.call('X'`, and the command of
/// every `chunked({'X'` (the helper that splits a long call).
fn script_calls(source: &str) -> BTreeSet<String> {
    ["redis.call('", "chunked({'"]
        .iter()
        .flat_map(|opening| source.split(opening).skip(1))
        .filter_map(|rest| rest.split_once('\'').map(|(command, _)| command))
        .map(str::to_ascii_lowercase)
        .collect()
}

/// Which queues a user may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// One queue: its keys and its cancel and outcome channels.
    Queue(String),
    /// Every queue under the prefix (a tenant), and the registry of queues.
    Prefix,
}

/// The rules of `ACL SETUSER <user> on >password <rules>` for `role` on
/// `wire` over `reach` under `prefix`: the key and channel patterns, then
/// `-@all` and each command. A prefix reach adds the registry of queues
/// (`SADD` for producers and workers, whose enqueues register a queue;
/// `SMEMBERS` and `SREM` for operators).
///
/// ```
/// use echomq::Wire;
/// use echomq::acl::{Reach, Role, rules};
/// let rules = rules("emq", &Reach::Queue("mail".into()), Role::Worker, Wire::Native).unwrap();
/// assert!(rules.starts_with(
///     "resetkeys ~emq:{mail}* resetchannels &emq:{mail}:cancel &emq:{mail}:outcome -@all"
/// ));
/// assert!(rules.contains(" +emq.claim "));
/// ```
pub fn rules(prefix: &str, reach: &Reach, role: Role, wire: Wire) -> Result<String, NameError> {
    let mut commands = commands(role, wire);
    let patterns = match reach {
        Reach::Queue(queue) => {
            let keys = Keyspace::new(prefix, &QueueName::new(queue.as_str())?)?;
            format!(
                "resetkeys ~{}* resetchannels &{} &{}",
                keys.base(),
                keys.cancel_channel(),
                keys.outcome_channel()
            )
        }
        Reach::Prefix => {
            let registry = Keyspace::registry(prefix)?;
            commands.extend(
                match role {
                    Role::Operator => ["smembers", "srem", "sadd"].as_slice(),
                    Role::Producer | Role::Worker => ["sadd"].as_slice(),
                }
                .iter()
                .map(|c| c.to_string()),
            );
            commands.sort();
            commands.dedup();
            format!(
                "resetkeys ~{prefix}:{{*}}* ~{registry} resetchannels &{prefix}:{{*}}:cancel &{prefix}:{{*}}:outcome"
            )
        }
    };
    let granted: Vec<String> = commands.iter().map(|c| format!("+{c}")).collect();
    Ok(format!("{patterns} -@all {}", granted.join(" ")))
}

/// The registry verbs a worker sends to queues other than its own for the
/// flows its jobs take part in (docs/protocol.md, "Flows", Tenancy): its
/// relay's `FLOW.RESOLVE` on each dependent's queue, and its check-up's
/// `FLOW.LINK` on each dependency's queue. Granted by name as the
/// registry has them: a verb not (yet) in the registry grants nothing.
pub const FLOW_REACH_VERBS: &[&str] = &["FLOW.RESOLVE", "FLOW.LINK"];

/// The commands [`flow_reach_rule`] grants on the other queues, lower
/// case, sorted: on wire 6 the `EMQ.*` commands of [`FLOW_REACH_VERBS`];
/// on wire 4 `FCALL`, `EVALSHA` and `EVAL` and the commands those verbs'
/// scripts call (a script's calls are checked against the user too).
pub fn flow_reach_commands(wire: Wire) -> Vec<String> {
    let mut out = BTreeSet::new();
    let reached = Transition::ALL
        .iter()
        .filter(|t| FLOW_REACH_VERBS.contains(&t.control().verb));
    for transition in reached {
        for (form, command) in transition.control().commands() {
            match wire {
                Wire::Script => out.extend(script_calls(script_source(*transition, form))),
                Wire::Native => {
                    out.insert(command.native.to_ascii_lowercase());
                }
            }
        }
    }
    if wire == Wire::Script {
        out.extend(["fcall", "evalsha", "eval"].map(String::from));
    }
    out.into_iter().collect()
}

/// The ACL selector that lets a worker of one queue reach `queues` for
/// its flows: `(~<base>* … &<outcome channel> … +<command> …)`, the keys
/// and outcome channels of those queues with only
/// [`flow_reach_commands`] (a dependent its policy decides publishes its
/// outcome to a waiter). Appended to the worker's [`rules`]: a selector
/// binds its commands to its keys, so the worker may send nothing else to
/// those queues on wire 6. On wire 4 it may `FCALL` any function there
/// (a function's name is not a key): the exact limit needs wire 6.
/// Empty for no queue.
pub fn flow_reach_rule(prefix: &str, queues: &[String], wire: Wire) -> Result<String, NameError> {
    if queues.is_empty() {
        return Ok(String::new());
    }
    let mut patterns = Vec::new();
    let mut channels = Vec::new();
    for queue in queues {
        let keys = Keyspace::new(prefix, &QueueName::new(queue.as_str())?)?;
        patterns.push(format!("~{}*", keys.base()));
        channels.push(format!("&{}", keys.outcome_channel()));
    }
    let granted: Vec<String> = flow_reach_commands(wire)
        .iter()
        .map(|c| format!("+{c}"))
        .collect();
    Ok(format!(
        "({} {} {})",
        patterns.join(" "),
        channels.join(" "),
        granted.join(" ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_durability_level_names_the_waits_it_sends_and_roles_do_not() {
        use crate::Durability;
        assert!(durability_commands(Durability::Memory).is_empty());
        assert_eq!(durability_commands(Durability::Local), ["waitaof"]);
        assert_eq!(
            durability_commands(Durability::replicas(1)),
            ["wait", "waitaof"]
        );
        for role in Role::ALL {
            for wire in [Wire::Script, Wire::Native] {
                let commands = commands(role, wire);
                assert!(
                    !commands.contains(&"waitaof".to_string()),
                    "{role:?} {wire:?}"
                );
            }
        }
    }

    #[test]
    fn a_worker_on_wire_4_may_run_what_its_scripts_call() {
        let commands = commands(Role::Worker, Wire::Script);
        for command in [
            "fcall",
            "evalsha",
            "eval",
            "script|load",
            "hmget",
            "zpopmin",
            "xadd",
            "bzpopmin",
            "ssubscribe",
        ] {
            assert!(
                commands.contains(&command.to_string()),
                "{command}: {commands:?}"
            );
        }
        assert!(!commands.iter().any(|c| c.starts_with("emq.")));
        // Loading the library is the operator's: a user who may load it
        // may replace it under everyone's calls.
        assert!(!commands.iter().any(|c| c.starts_with("function")));
    }

    #[test]
    fn a_worker_on_wire_6_sends_its_native_commands_and_no_script() {
        let commands = commands(Role::Worker, Wire::Native);
        for command in [
            "emq.claim",
            "emq.complete",
            "emq.complete.bulk",
            "emq.requeue",
            "emq.version",
        ] {
            assert!(
                commands.contains(&command.to_string()),
                "{command}: {commands:?}"
            );
        }
        assert!(!commands.contains(&"evalsha".to_string()));
        assert!(!commands.contains(&"emq.obliterate".to_string()));
    }

    #[test]
    fn a_producer_enqueues_reads_back_and_waits() {
        assert_eq!(
            commands(Role::Producer, Wire::Native),
            [
                "emq.enqueue",
                "emq.enqueue.bulk",
                "emq.flow.add",
                "emq.flow.add.bulk",
                "emq.flow.link",
                "emq.flow.resolve",
                "emq.get",
                "emq.outcome",
                "emq.outcome.bulk",
                "emq.schedule",
                "emq.schedule.bulk",
                "emq.version",
                "info",
                "ping",
                "ssubscribe"
            ]
        );
    }

    #[test]
    fn script_calls_are_read_from_redis_call_and_chunked() {
        let calls = script_calls("redis.call('HSET', k) chunked({'DEL'}, ids, 1) x('ZADD')");
        assert_eq!(calls.into_iter().collect::<Vec<_>>(), ["del", "hset"]);
    }

    #[test]
    fn a_prefix_reach_adds_every_queue_and_the_registry() {
        let rules = rules("t1", &Reach::Prefix, Role::Operator, Wire::Script).unwrap();
        assert!(
            rules.starts_with(
                "resetkeys ~t1:{*}* ~t1:queues resetchannels &t1:{*}:cancel &t1:{*}:outcome -@all"
            ),
            "{rules}"
        );
        assert!(rules.contains(" +smembers"), "{rules}");
    }

    #[test]
    fn the_flow_reach_rule_binds_the_relay_s_commands_to_the_other_queues() {
        let rule = flow_reach_rule("emq", &["b".into(), "c".into()], Wire::Native).unwrap();
        assert!(
            rule.starts_with("(~emq:{b}* ~emq:{c}* &emq:{b}:outcome &emq:{c}:outcome "),
            "{rule}"
        );
        assert!(rule.contains(" +emq.flow.resolve"), "{rule}");
        assert!(!rule.contains("emq.claim"), "{rule}");
        assert!(rule.ends_with(')'), "{rule}");
        let scripted = flow_reach_commands(Wire::Script);
        for command in ["fcall", "evalsha", "hmget"] {
            assert!(scripted.contains(&command.to_string()), "{scripted:?}");
        }
        assert_eq!(flow_reach_rule("emq", &[], Wire::Native).unwrap(), "");
        assert!(flow_reach_rule("emq", &["bad name".into()], Wire::Native).is_err());
    }

    #[test]
    fn a_bad_queue_name_is_refused() {
        assert!(
            rules(
                "emq",
                &Reach::Queue("bad name".into()),
                Role::Worker,
                Wire::Script
            )
            .is_err()
        );
    }
}
