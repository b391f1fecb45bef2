//! Sending a transition over the chosen wire: a function of the Lua
//! library by `FCALL` (wire 4; by `EVALSHA` where the server will not take
//! the library) or the module's `EMQ.*` command (wire 6).

use crate::acl;
use crate::error::{Error, Result, connection_failed};
use crate::scripts::{LuaScript, SCRIPTS};
use crate::transport::durability::{Durability, Wait};
use crate::transport::link::Link;
use echomq_protocol::{Form, JobId, Keyspace, Refusal, Refused, Transition};
use loaded::Loaded;
use redis::{Cmd, RedisError, Value};
use std::collections::HashSet;
use std::sync::Arc;

mod loaded;

/// Which implementation of the protocol the connector talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wire {
    /// Wire 4 (default): Lua, the functions of one library by `FCALL`
    /// (loaded on first use), or scripts by `EVALSHA` where the user may not
    /// load the library; works on any Valkey ≥ 7.2 and Redis ≥ 7.0, managed
    /// services included.
    #[default]
    Script,
    /// Wire 6: the native `EMQ.*` commands of the EchoMQ module.
    Native,
}

/// One transition to send: the verb, the job it concerns (for error
/// messages), and its arguments after the base key.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub transition: Transition,
    pub job: Option<JobId>,
    pub args: Vec<Vec<u8>>,
    /// The transition's single form, or its bulk form (`enqueue_bulk.lua`
    /// on wire 4, `EMQ.ENQUEUE.BULK` on wire 6).
    pub form: Form,
}

impl Call {
    pub(crate) fn new(transition: Transition, job: Option<&JobId>) -> Self {
        Self {
            transition,
            job: job.cloned(),
            args: Vec::new(),
            form: Form::Single,
        }
    }

    pub(crate) fn arg(mut self, arg: impl Into<Vec<u8>>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub(crate) fn int(self, value: u64) -> Self {
        self.arg(value.to_string())
    }

    /// Sends the transition's bulk form instead (the registry has one).
    pub(crate) fn bulk(mut self) -> Self {
        self.form = Form::Bulk;
        self
    }

    /// The registry's command for this call.
    fn command(&self) -> &'static echomq_protocol::Command {
        self.transition.command(self.form).unwrap_or_else(|| {
            panic!(
                "{} has no {:?} form in the registry of controls",
                self.transition, self.form
            )
        })
    }
}

/// The wire plus, on wire 6, the commands the loaded module serves, and
/// the user the connections authenticate as.
#[derive(Debug, Clone)]
pub(crate) struct Dispatch {
    pub wire: Wire,
    pub native: HashSet<String>,
    pub user: String,
    /// On wire 4, what the server holds (the library, or the scripts).
    loaded: Arc<Loaded>,
    /// The wait sent behind each durable write; `None` at durability memory.
    wait: Option<Wait>,
}

impl Dispatch {
    /// A dispatch on `wire` for `user`; `native`: the module's commands;
    /// `wait`: what each durable write waits for.
    pub(crate) fn new(
        wire: Wire,
        native: HashSet<String>,
        user: String,
        wait: Option<Wait>,
    ) -> Self {
        Self {
            wire,
            native,
            user,
            loaded: Arc::default(),
            wait,
        }
    }

    /// The durability level durable writes wait for.
    pub(crate) fn durability(&self) -> Durability {
        self.wait.map_or(Durability::Memory, |wait| wait.level())
    }

    /// Whether `call` waits for the durability level (see [`Self::wait_for`]).
    pub(crate) fn waits_for(&self, call: &Call) -> bool {
        self.wait_for(call).is_some()
    }

    /// The wait to send behind `call`: none for a control that is not
    /// durable (a read, a claim, a sweep) or at durability memory.
    fn wait_for(&self, call: &Call) -> Option<&Wait> {
        self.wait
            .as_ref()
            .filter(|_| call.transition.control().durable)
    }

    fn command(&self, keys: &Keyspace, call: &Call) -> Result<Cmd> {
        match self.wire {
            Wire::Script if self.loaded.functions() => {
                Ok(self.script(call).fcall(keys, &call.args))
            }
            Wire::Script => Ok(self.script(call).evalsha(keys, &call.args)),
            Wire::Native => {
                let name = call.command().native;
                if !self.native.contains(name) {
                    return Err(Error::Wire6Unsupported {
                        name: name.to_string(),
                    });
                }
                let mut cmd = redis::cmd(name);
                cmd.arg(keys.base());
                for arg in &call.args {
                    cmd.arg(arg.as_slice());
                }
                Ok(cmd)
            }
        }
    }

    /// Whether `transition`'s bulk form can be sent on this wire: always
    /// on wire 4; on wire 6 when the loaded module serves it.
    pub(crate) fn has_bulk(&self, transition: Transition) -> bool {
        let bulk = transition.command(Form::Bulk);
        self.wire == Wire::Script || bulk.is_some_and(|bulk| self.native.contains(bulk.native))
    }

    fn script(&self, call: &Call) -> &'static LuaScript {
        SCRIPTS.get(call.transition, call.form)
    }

    /// Sends one call and returns its reply, refusals mapped to
    /// [`Error::Refused`]; a durable call waits for the connector's
    /// durability level ([`Error::NotDurable`] when the wait falls short).
    pub(crate) async fn call(&self, link: &Link, keys: &Keyspace, call: &Call) -> Result<Value> {
        let cmd = self.command(keys, call)?;
        let wait = self.wait_for(call);
        let reply = send(link, cmd, wait).await;
        if matches!(&reply, Err(err) if is_readonly(err) || lost(link, err)) {
            link.reopen().await;
        }
        let sent = match reply {
            Ok(sent) => {
                if self.wire == Wire::Script && self.loaded.functions() {
                    self.loaded.library_answered();
                }
                Ok(sent)
            }
            Err(err) if self.wire == Wire::Script && is_unloaded(&err) => {
                self.run_unloaded(link, keys, call, &err, wait).await
            }
            Err(err) => Err(err),
        };
        let (reply, waited) = sent.map_err(|err| self.refusal(keys, call, err))?;
        check_wait(wait, waited)?;
        Ok(reply)
    }

    /// Runs a wire 4 `call` the server answered `err` for, one of
    /// [`is_unloaded`]'s: a script not in its cache is sent whole (`EVAL`);
    /// a library it lacks is loaded and the call sent again. When the user
    /// may not load the library or call it, this dispatch turns to
    /// `EVALSHA` for good, and the call goes as a script. `wait` goes
    /// behind the call that runs.
    async fn run_unloaded(
        &self,
        link: &Link,
        keys: &Keyspace,
        call: &Call,
        err: &RedisError,
        wait: Option<&Wait>,
    ) -> redis::RedisResult<Sent> {
        let script = self.script(call);
        self.loaded.forget();
        if is_function_missing(err) {
            // Loaded by another client meanwhile, or refused: either way
            // the call is sent again, and says which.
            Loaded::load_library(link).await;
            match send(link, script.fcall(keys, &call.args), wait).await {
                Err(err) if is_function_missing(&err) || is_fcall_refused(&err) => {}
                other => return other,
            }
        } else if !is_fcall_refused(err) {
            return send(link, script.eval(keys, &call.args), wait).await;
        }
        self.loaded.refuse_functions();
        send(link, script.eval(keys, &call.args), wait).await
    }

    /// A part of a reply (an entry of an array): an error entry mapped as
    /// [`Dispatch::call`] maps a whole reply's, as the refusal of `call`.
    pub(crate) fn nested(&self, keys: &Keyspace, call: &Call, part: Value) -> Result<Value> {
        server_error_to_err(part).map_err(|err| self.refusal(keys, call, err))
    }

    /// Sends many calls in one pipeline (one round trip); one result per call.
    pub(crate) async fn call_many(
        &self,
        link: &Link,
        keys: &Keyspace,
        calls: &[Call],
    ) -> Result<Vec<Result<Value>>> {
        if calls.is_empty() {
            return Ok(Vec::new());
        }
        if self.wire == Wire::Script {
            let scripts = calls.iter().map(|call| self.script(call));
            self.loaded.prepare(link, scripts).await;
        }
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for call in calls {
            pipe.add_command(self.command(keys, call)?);
        }
        // One wait behind the whole pipeline covers every write in it.
        let wait = calls.iter().find_map(|call| self.wait_for(call));
        if let Some(wait) = wait {
            wait.add_to(&mut pipe);
        }
        let mut replies: Vec<Value> = match pipe.query_async(&mut link.clone()).await {
            Ok(replies) => replies,
            Err(err) => {
                if lost(link, &err) {
                    link.reopen().await;
                }
                return Err(err.into());
            }
        };
        let waited = wait.and_then(|wait| wait.take_reply(&mut replies));
        if replies
            .iter()
            .any(|reply| matches!(reply, Value::ServerError(err) if err.code() == READONLY))
        {
            link.reopen().await;
        }
        let mut results = Vec::with_capacity(calls.len());
        for (call, reply) in calls.iter().zip(replies) {
            let wait = self.wait_for(call);
            let result = match server_error_to_err(reply) {
                Err(err) if self.wire == Wire::Script && is_unloaded(&err) => self
                    .run_unloaded(link, keys, call, &err, wait)
                    .await
                    .map_err(|err| self.refusal(keys, call, err))
                    .and_then(|(reply, waited)| check_wait(wait, waited).map(|()| reply)),
                Ok(reply) => check_wait(wait, waited.clone()).map(|()| reply),
                Err(err) => Err(self.refusal(keys, call, err)),
            };
            results.push(result);
        }
        Ok(results)
    }
}

/// A reply, and the reply of the wait sent behind it (if one was).
type Sent = (Value, Option<Value>);

/// Sends `cmd`; with `wait`, the wait goes behind it in the same pipeline,
/// on the same connection, so it covers the write even if the connection
/// is replaced afterwards (a new connection has written nothing, and a wait
/// sent on it would confirm nothing).
async fn send(link: &Link, cmd: Cmd, wait: Option<&Wait>) -> redis::RedisResult<Sent> {
    let Some(wait) = wait else {
        let reply = cmd.query_async::<Value>(&mut link.clone()).await?;
        return Ok((server_error_to_err(reply)?, None));
    };
    let mut pipe = redis::pipe();
    pipe.ignore_errors().add_command(cmd);
    wait.add_to(&mut pipe);
    let mut replies: Vec<Value> = pipe.query_async(&mut link.clone()).await?;
    let waited = wait.take_reply(&mut replies);
    let reply = replies.pop().unwrap_or(Value::Nil);
    Ok((server_error_to_err(reply)?, waited))
}

/// Checks the reply of the wait sent behind a write, if one was.
fn check_wait(wait: Option<&Wait>, waited: Option<Value>) -> Result<()> {
    match (wait, waited) {
        (Some(wait), Some(waited)) => wait.check(waited),
        _ => Ok(()),
    }
}

fn server_error_to_err(value: Value) -> redis::RedisResult<Value> {
    match value {
        Value::ServerError(err) => Err(err.into()),
        other => Ok(other),
    }
}

/// A call that did not reach the server, on a link that then looks for
/// the primary elsewhere ([`Link::finds_a_new_primary`]).
fn lost(link: &Link, err: &RedisError) -> bool {
    link.finds_a_new_primary() && connection_failed(err)
}

/// The code of a write sent to a replica: the server was a primary until
/// a failover.
const READONLY: &str = "READONLY";

fn is_readonly(err: &RedisError) -> bool {
    err.code() == Some(READONLY)
}

/// A wire 4 call the server could not run as sent: a script not in its
/// cache (`NOSCRIPT`), a library it lacks, or an `FCALL` the user's ACL
/// does not grant (rules made before wire 4 called functions).
fn is_unloaded(err: &RedisError) -> bool {
    err.code() == Some("NOSCRIPT") || is_function_missing(err) || is_fcall_refused(err)
}

/// `ERR Function not found`: the server has not (or no longer) the library.
fn is_function_missing(err: &RedisError) -> bool {
    err.detail()
        .is_some_and(|detail| detail.starts_with("Function not found"))
}

/// The user may not run `FCALL` (`NOPERM … 'fcall' command`).
fn is_fcall_refused(err: &RedisError) -> bool {
    err.code() == Some("NOPERM")
        && err
            .detail()
            .is_some_and(|detail| detail.to_ascii_lowercase().contains("'fcall'"))
}

impl Dispatch {
    /// Maps a protocol error reply to a [`Refused`] naming the job and
    /// verb, and the server's ACL refusing it to [`Error::NotPermitted`]
    /// naming the user, the queue's base key and the queue.
    fn refusal(&self, keys: &Keyspace, call: &Call, err: RedisError) -> Error {
        match err
            .code()
            .and_then(|code| Refusal::parse(code, err.detail()))
        {
            Some(reason) => Error::Refused(Refused {
                job: call.job.clone(),
                transition: call.transition,
                reason,
            }),
            None => self.target(keys).refusal(err),
        }
    }

    /// A call on the queue of `keys`, for [`Error::NotPermitted`].
    pub(crate) fn target<'a>(&'a self, keys: &'a Keyspace) -> acl::Target<'a> {
        acl::Target {
            user: &self.user,
            key: keys.base(),
            channel: None,
            queue: Some(keys.queue().as_str()),
        }
    }
}
