//! What a command runs by `RedisModule_Call` rather than on an open key
//! (the log list, `OBLITERATE`'s deletions, the script-shaped `DEL` and
//! `ZREMRANGEBYRANK` of retention, and `SPUBLISH` on a server without the
//! module API's shard publish), and the copy of its reply.

use super::Store;
use crate::server::args::{refuse, reply_text};
use valkey_module::{CallOptions, CallOptionsBuilder, CallReply, CallResult, ValkeyError};

/// A reply of a called command, copied out of the server's reply object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    Int(i64),
    Bytes(Vec<u8>),
    Array(Vec<Reply>),
    Null,
}

impl Reply {
    fn from_call(reply: &CallReply) -> Self {
        match reply {
            CallReply::I64(n) => Reply::Int(n.to_i64()),
            CallReply::String(s) => Reply::Bytes(s.as_bytes().to_vec()),
            CallReply::Array(items) => Reply::Array(
                items
                    .iter()
                    .map(|item| item.map_or(Reply::Null, |item| Reply::from_call(&item)))
                    .collect(),
            ),
            _ => Reply::Null,
        }
    }

    /// The integer of an integer reply (0 otherwise).
    pub(crate) fn int(&self) -> i64 {
        match self {
            Reply::Int(n) => *n,
            _ => 0,
        }
    }

    /// The items of an array reply (none otherwise).
    pub(crate) fn items(self) -> Vec<Reply> {
        match self {
            Reply::Array(items) => items,
            _ => Vec::new(),
        }
    }

    /// The bytes of a string reply.
    pub(crate) fn bytes(self) -> Option<Vec<u8>> {
        match self {
            Reply::Bytes(bytes) => Some(bytes),
            _ => None,
        }
    }
}

impl Store<'_> {
    /// Runs a command by `RedisModule_Call`, after closing every handle
    /// (no open handle may see a key change under it).
    fn call(&self, options: &CallOptions, cmd: &str, args: &[&[u8]]) -> Result<Reply, ValkeyError> {
        self.handles.borrow_mut().clear();
        self.run(options, cmd, args)
            .map(|reply| Reply::from_call(&reply))
    }

    /// Runs a command by `RedisModule_Call`: its error reply is the
    /// refusal. The caller has closed the handles of the keys it changes.
    fn run(
        &self,
        options: &CallOptions,
        cmd: &str,
        args: &[&[u8]],
    ) -> Result<CallReply<'static>, ValkeyError> {
        let result: CallResult<'static> = self.ctx.call_ext(cmd, options, args);
        result.map_err(|err| refuse(reply_text(err.as_bytes())))
    }

    /// A read: not replicated.
    pub(crate) fn read(&self, cmd: &str, args: &[&[u8]]) -> Result<Reply, ValkeyError> {
        let options = self
            .read
            .get_or_init(|| CallOptionsBuilder::new().errors_as_replies().build());
        self.call(options, cmd, args)
    }

    fn write_options(&self) -> &CallOptions {
        self.write
            .get_or_init(|| CallOptionsBuilder::new().errors_as_replies().build())
    }

    /// A write: not replicated as itself (the command is, whole).
    pub(crate) fn write(&self, cmd: &str, args: &[&[u8]]) -> Result<Reply, ValkeyError> {
        crate::server::replicate::wrote();
        self.call(self.write_options(), cmd, args)
    }

    /// A [`Store::write`] whose reply is not wanted, by a command that
    /// changes only `keys`: their handles are closed, and the others stay
    /// open for the rest of the command rather than be opened again.
    pub(super) fn write_changing(
        &self,
        keys: &[&[u8]],
        cmd: &str,
        args: &[&[u8]],
    ) -> Result<(), ValkeyError> {
        crate::server::replicate::wrote();
        {
            let mut handles = self.handles.borrow_mut();
            for key in keys {
                drop(handles.remove(*key));
            }
        }
        self.run(self.write_options(), cmd, args).map(drop)
    }
}
