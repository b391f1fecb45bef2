//! The ACL categories of the module's commands: every command joins `emq`,
//! so an operator grants or withholds the module as one (`+@emq`,
//! `-@emq`), and the categories its flags imply (`@write`, `@read`,
//! `@fast` or `@slow`), which the server gives its own commands but not a
//! module's: without them `EMQ.ENQUEUE` is in no `@write` and escapes
//! `-@write`. Key patterns apply apart from categories, through each
//! command's first key.
//!
//! The raw API, not the `valkey-module` wrappers: those sit behind a
//! "minimum Valkey 8" feature and unwrap the server's function pointers,
//! which are absent on Redis 7.0, where the module must still load. So
//! this file, like `key/` and `clock.rs`, holds `unsafe`.
#![allow(unsafe_code)]

use std::ffi::{CString, c_int};
use std::io;
use valkey_module::{Context, raw};

/// The module's category, as operators write it: `+@emq`.
const CATEGORY: &str = "emq";

/// Logged once, at load, on a server without module ACL categories.
const NO_CATEGORY: &str = "registered no ACL category: this server has no \
    module ACL categories (Valkey 8 and Redis 7.4 have them), so there is no @emq; \
    name the commands in ACL rules instead (+EMQ.VERSION +EMQ.CLAIM …)";

/// The categories of a command with the module `flags` (`write deny-oom`):
/// `emq` (for a command clients call), then those the server gives its own
/// commands of those flags.
fn categories(flags: &str, client: bool) -> String {
    let flags: Vec<&str> = flags.split(' ').collect();
    let mut categories = if client { vec![CATEGORY] } else { Vec::new() };
    for (flag, category) in [("write", "write"), ("readonly", "read"), ("fast", "fast")] {
        if flags.contains(&flag) {
            categories.push(category);
        }
    }
    if !flags.contains(&"fast") {
        categories.push("slow");
    }
    categories.join(" ")
}

/// Adds the `emq` category, then puts each of `commands` (registered, as
/// (name, flags)) in its [`categories`], and each of `internal`
/// (`EMQ.REPLAY` and `EMQ.REPLAY.ORDER`, which no client may call) in
/// those of its flags but not in `emq`, which
/// lists what clients call; on a server without the API, logs
/// [`NO_CATEGORY`] and leaves them in none. An error where the server has
/// the API but refuses: the load fails rather than leave a command outside
/// `-@emq`.
pub(crate) fn categorise<'a>(
    ctx: &Context,
    commands: impl IntoIterator<Item = (&'a str, &'a str)>,
    internal: &[(&'a str, &'a str)],
) -> Result<(), String> {
    // SAFETY: the server fills these pointers in before `OnLoad` and never
    // writes them again; each is copied out by value.
    let api = unsafe {
        (
            raw::RedisModule_AddACLCategory,
            raw::RedisModule_GetCommand,
            raw::RedisModule_SetCommandACLCategories,
        )
    };
    let (Some(add), Some(get), Some(set)) = api else {
        ctx.log_notice(NO_CATEGORY);
        return Ok(());
    };
    let category = CString::new(CATEGORY).expect("no NUL in the category's name");
    // SAFETY: called during `OnLoad` with the load's context.
    if unsafe { add(ctx.ctx, category.as_ptr()) } != raw::Status::Ok as c_int {
        // EBUSY: the category outlived an earlier load of this module (the
        // server keeps a module's categories after MODULE UNLOAD).
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::ResourceBusy {
            return Err(format!("ACL category {CATEGORY}: {error}"));
        }
    }
    let commands = commands
        .into_iter()
        .map(|(name, flags)| (name, flags, true));
    let internal = internal.iter().map(|(name, flags)| (*name, *flags, false));
    for (name, flags, client) in commands.chain(internal) {
        let command = CString::new(name).expect("no NUL in a command's name");
        let categories = CString::new(categories(flags, client)).expect("no NUL in a category");
        // SAFETY: during `OnLoad`; `get` answers NULL for a name this
        // module did not register, which is never passed to `set`.
        let joined = unsafe {
            let handle = get(ctx.ctx, command.as_ptr());
            !handle.is_null() && set(handle, categories.as_ptr()) == raw::Status::Ok as c_int
        };
        if !joined {
            return Err(format!(
                "{name} did not join the ACL categories {categories:?}: {}",
                io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}
