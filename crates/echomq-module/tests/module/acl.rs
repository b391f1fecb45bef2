//! The module's commands in the ACL category `emq`: `+@emq` and `-@emq`
//! grant or withhold the module as one, each command is also in the
//! categories its flags imply (`@write`, `@read`, `@fast`, `@slow`), key
//! patterns apply through each command's base key, and a server without
//! module ACL categories (Redis 7.0) loads the module and says so.
//!
//! The tests run on `$EMQ_VALKEY_SERVER` whatever it is: where it has no
//! module categories (the compatibility run on Redis 7.0), a user is
//! granted the module by naming its commands, as the load's notice tells
//! operators to, and the key patterns are held to the same account.

use echomq_protocol::Transition;
use echomq_server::{ServerBinary, ServerConfig, ServerKind, ServerProcess};
use echomq_testkit::{TestServer, module_path};
use redis::Value;
use redis::aio::MultiplexedConnection;

/// What the module logs at load where it registered no category.
const NO_CATEGORY: &str = "<echomq> registered no ACL category";

/// The queue the tenant may use, and another queue's base key.
const OWN: &str = "emq:{a}";
const OTHER: &str = "emq:{b}";

/// Every command `EMQ.VERSION` lists, with its flags: `EMQ.VERSION`, then
/// the registry's.
fn served() -> Vec<(&'static str, &'static str)> {
    std::iter::once(("EMQ.VERSION", "readonly fast"))
        .chain(Transition::ALL.iter().flat_map(|t| {
            t.control()
                .commands()
                .map(|(_, command)| (command.native, command.flags))
        }))
        .collect()
}

fn valkey() -> ServerBinary {
    ServerBinary::locate().unwrap_or_else(|e| panic!("no valkey-server: {e}"))
}

/// Whether `binary` has module ACL categories
/// (`RedisModule_AddACLCategory`: Valkey 8, Redis 7.4).
fn has_module_categories(binary: &ServerBinary) -> bool {
    let version = binary.version().unwrap();
    let mut numbers = version.split('.').map(|n| n.parse::<u32>().unwrap_or(0));
    let release = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    match binary.kind {
        ServerKind::Valkey => release >= (8, 0),
        ServerKind::Redis => release >= (7, 4),
    }
}

/// The rule that grants (`+`) or withholds (`-`) the module's commands:
/// `+@emq`, or on a server without module categories each command by name.
fn module_rule(sign: char, categories: bool) -> String {
    if categories {
        format!("{sign}@emq")
    } else {
        served()
            .iter()
            .map(|(name, _)| format!("{sign}{name}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A server with the module, the default user's connection, and whether
/// the server has module categories.
async fn started() -> (TestServer, MultiplexedConnection, bool) {
    let binary = valkey();
    let categories = has_module_categories(&binary);
    let server = TestServer::with_config(binary, false, vec![module_path()]);
    let admin = server.connection().await;
    (server, admin, categories)
}

/// Creates the user `name` (password `pw`) with `rules`, and connects as it.
async fn user(
    server: &TestServer,
    admin: &mut MultiplexedConnection,
    name: &str,
    rules: &str,
) -> MultiplexedConnection {
    let () = echomq_testkit::acl::setuser(name, rules)
        .query_async(admin)
        .await
        .unwrap();
    let url = format!("redis://{name}:pw@127.0.0.1:{}/", server.port());
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("connecting as {name}: {e}"))
}

/// A user that may run the module's commands on queue `a`'s keys only.
async fn tenant(
    server: &TestServer,
    admin: &mut MultiplexedConnection,
    categories: bool,
) -> MultiplexedConnection {
    let rules = format!("~{OWN}* {}", module_rule('+', categories));
    user(server, admin, "tenant", &rules).await
}

/// `ACL CAT [category]`, upper-cased and sorted.
async fn acl_cat(c: &mut MultiplexedConnection, category: Option<&str>) -> Vec<String> {
    let mut cmd = redis::cmd("ACL");
    cmd.arg("CAT").arg(category);
    let names: Vec<String> = cmd.query_async(c).await.unwrap();
    let mut names: Vec<String> = names.iter().map(|n| n.to_ascii_uppercase()).collect();
    names.sort();
    names
}

/// The members of `@emq`, sorted; `None` where the server has no such
/// category.
async fn emq_members(c: &mut MultiplexedConnection) -> Option<Vec<String>> {
    if acl_cat(c, None).await.contains(&"EMQ".into()) {
        Some(acl_cat(c, Some("emq")).await)
    } else {
        None
    }
}

/// Every key of `base`'s queue with its `DUMP`, sorted: what a refused
/// command must leave as it found.
async fn queue_dump(c: &mut MultiplexedConnection, base: &str) -> Vec<(String, Vec<u8>)> {
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{base}*"))
        .query_async(c)
        .await
        .unwrap();
    keys.sort();
    let mut dump = Vec::new();
    for key in keys {
        let bytes: Vec<u8> = redis::cmd("DUMP").arg(&key).query_async(c).await.unwrap();
        dump.push((key, bytes));
    }
    dump
}

/// Enqueues two jobs on `base` and claims one: (its id, its token).
async fn one_active_one_pending(c: &mut MultiplexedConnection, base: &str) -> (String, i64) {
    for payload in ["p1", "p2"] {
        let _: (String, i64) = redis::cmd("EMQ.ENQUEUE")
            .arg(base)
            .arg("*")
            .arg(payload)
            .query_async(c)
            .await
            .unwrap();
    }
    let claimed: Vec<(String, i64, String, i64, i64)> = redis::cmd("EMQ.CLAIM")
        .arg(base)
        .arg("w")
        .arg(60_000)
        .query_async(c)
        .await
        .unwrap();
    let (id, token, ..) = claimed.into_iter().next().expect("a claimed job");
    (id, token)
}

/// Sends `cmd` as the tenant on the other queue, seeded with an active
/// and a pending job: it is refused `NOPERM`, and the other queue's keys
/// are as they were.
async fn assert_refused_on_the_other_queue(cmd: impl FnOnce(&str, i64) -> redis::Cmd) {
    let (server, mut admin, categories) = started().await;
    let (id, token) = one_active_one_pending(&mut admin, OTHER).await;
    let before = queue_dump(&mut admin, OTHER).await;
    assert!(!before.is_empty());
    let mut tenant = tenant(&server, &mut admin, categories).await;
    let cmd = cmd(&id, token);
    let err = cmd
        .query_async::<Value>(&mut tenant)
        .await
        .expect_err("a command on another queue's key");
    assert_eq!(err.code(), Some("NOPERM"), "{err}");
    assert_eq!(queue_dump(&mut admin, OTHER).await, before, "{cmd:?}");
}

#[tokio::test]
async fn acl_cat_emq_lists_exactly_the_served_commands() {
    let (server, mut admin, categories) = started().await;
    let members = emq_members(&mut admin).await;
    assert_eq!(members.is_some(), categories, "ACL CAT lists emq");
    let log = std::fs::read_to_string(server.dir().join("server.log")).unwrap();
    assert_eq!(log.contains(NO_CATEGORY), !categories, "{log}");
    if let Some(members) = members {
        let (_, listed): (String, Vec<String>) = redis::cmd("EMQ.VERSION")
            .query_async(&mut admin)
            .await
            .unwrap();
        let mut listed: Vec<String> = listed.iter().map(|n| n.to_ascii_uppercase()).collect();
        listed.sort();
        assert_eq!(members, listed);
    }
}

#[tokio::test]
async fn each_command_is_in_the_categories_its_flags_imply() {
    let (_server, mut admin, categories) = started().await;
    for (category, flag, implied_by) in [
        ("write", "write", true),
        ("read", "readonly", true),
        ("fast", "fast", true),
        ("slow", "fast", false),
    ] {
        let members = acl_cat(&mut admin, Some(category)).await;
        for (name, flags) in served() {
            let implied = flags.split(' ').any(|f| f == flag) == implied_by;
            assert_eq!(
                members.iter().any(|m| m == name),
                categories && implied,
                "{name} ({flags}) in @{category}"
            );
        }
    }
}

#[tokio::test]
async fn a_user_with_emq_runs_the_spine_on_its_own_queue() {
    let (server, mut admin, categories) = started().await;
    let mut tenant = tenant(&server, &mut admin, categories).await;
    let (id, token) = one_active_one_pending(&mut tenant, OWN).await;
    let ok: String = redis::cmd("EMQ.COMPLETE")
        .arg(OWN)
        .arg(&id)
        .arg(token)
        .query_async(&mut tenant)
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let completed: Vec<String> = redis::cmd("ZRANGE")
        .arg(format!("{OWN}:completed"))
        .arg(0)
        .arg(-1)
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(completed, [id]);
}

#[tokio::test]
async fn enqueue_on_another_queue_is_refused() {
    assert_refused_on_the_other_queue(|_, _| {
        redis::cmd("EMQ.ENQUEUE")
            .arg(OTHER)
            .arg("*")
            .arg("intruder")
            .clone()
    })
    .await;
}

#[tokio::test]
async fn claim_on_another_queue_is_refused() {
    assert_refused_on_the_other_queue(|_, _| {
        redis::cmd("EMQ.CLAIM")
            .arg(OTHER)
            .arg("intruder")
            .arg(60_000)
            .clone()
    })
    .await;
}

#[tokio::test]
async fn complete_on_another_queue_is_refused() {
    assert_refused_on_the_other_queue(|id, token| {
        redis::cmd("EMQ.COMPLETE")
            .arg(OTHER)
            .arg(id)
            .arg(token)
            .clone()
    })
    .await;
}

#[tokio::test]
async fn a_user_without_emq_is_refused_every_command_of_the_module() {
    let (server, mut admin, categories) = started().await;
    let rules = format!("~* &* +@all {}", module_rule('-', categories));
    let mut user = user(&server, &mut admin, "no-emq", &rules).await;
    for (name, _) in served() {
        let mut cmd = redis::cmd(name);
        if name != "EMQ.VERSION" {
            cmd.arg(OWN).arg("*").arg("p");
        }
        let err = cmd.query_async::<Value>(&mut user).await.expect_err(name);
        assert_eq!(err.code(), Some("NOPERM"), "{name}: {err}");
    }
    let dbsize: i64 = redis::cmd("DBSIZE").query_async(&mut admin).await.unwrap();
    assert_eq!(dbsize, 0, "a refused command wrote");
    // The rest of the server is still the user's.
    let () = redis::cmd("SET")
        .arg("k")
        .arg("v")
        .query_async(&mut user)
        .await
        .unwrap();
    let v: String = redis::cmd("GET")
        .arg("k")
        .query_async(&mut user)
        .await
        .unwrap();
    assert_eq!(v, "v");
}

#[tokio::test]
async fn a_reloaded_module_joins_the_category_it_left_behind() {
    let binary = valkey();
    let categories = has_module_categories(&binary);
    let dir = tempfile::tempdir().unwrap();
    let mut config = ServerConfig::new(dir.path());
    config.modules = vec![module_path()];
    config.extra_args = vec!["--enable-module-command".into(), "yes".into()];
    let server = ServerProcess::spawn(&binary, &config).unwrap();
    let client = redis::Client::open(server.url()).unwrap();
    let mut c = client.get_multiplexed_async_connection().await.unwrap();
    let before = emq_members(&mut c).await;
    // The server keeps a module's category after MODULE UNLOAD: the
    // second load finds `emq` taken and joins it.
    let path = module_path().display().to_string();
    for args in [["UNLOAD", "echomq"], ["LOAD", &path]] {
        let () = redis::cmd("MODULE")
            .arg(&args)
            .query_async(&mut c)
            .await
            .unwrap();
    }
    let after = emq_members(&mut c).await;
    assert_eq!(after, before);
    assert_eq!(after.map(|m| m.len()), categories.then(|| served().len()));
}

#[tokio::test]
async fn redis_7_0_loads_the_module_with_no_category_and_says_so() {
    let binary = ServerBinary::redis().unwrap_or_else(|e| panic!("no redis-server: {e}"));
    assert!(!has_module_categories(&binary), "{binary:?} has categories");
    let server = TestServer::with_config(binary, false, vec![module_path()]);
    let mut c = server.connection().await;
    let (_, listed): (String, Vec<String>) =
        redis::cmd("EMQ.VERSION").query_async(&mut c).await.unwrap();
    assert_eq!(listed.len(), served().len());
    let log = std::fs::read_to_string(server.dir().join("server.log")).unwrap();
    assert_eq!(log.matches(NO_CATEGORY).count(), 1, "{log}");
    assert!(!acl_cat(&mut c, None).await.contains(&"EMQ".into()));
    // An operator's `-@emq` is refused there, not taken to mean nothing.
    let refused = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("u")
        .arg("+@all")
        .arg("-@emq")
        .query_async::<()>(&mut c)
        .await;
    assert!(refused.is_err(), "{refused:?}");
}
