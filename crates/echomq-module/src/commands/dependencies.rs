//! Over dependencies (flows, docs/protocol.md "Flows"): FLOW.ADD (and
//! FLOW.ADD.BULK), FLOW.DEPS, FLOW.DEPENDENTS, FLOW.WAIT, FLOW.RESOLVE, the
//! outbox's FLOW.OUTBOX and FLOW.ACK (FLOW.SETTLE is `settle.rs`'s), and
//! the check-up's FLOW.LINK and FLOW.CHECKUP — each the native twin of
//! its script in `crates/echomq/scripts/`, same checks in the same order,
//! same writes, replies and events. The bodies are in
//! `server/store/flow_jobs.rs`, `server/store/flow_wait.rs`,
//! `server/store/flow_resolve.rs` and `server/store/flow_link.rs`; what a
//! deciding command writes to the
//! outbox is in `server/store/outbox.rs`.

use crate::server::args::{ATTEMPTS, Args, GROUP, Opt, PRIORITY, TRACE, bulk_groups, refuse};
use crate::server::clock::now_ms;
use crate::server::key::Bound;
use crate::server::key::Kind;
use crate::server::reply::enqueued_reply;
use crate::server::reply::{bulk, int};
use crate::server::store::deadlines::{
    Deadlines, START_BY, START_WITHIN, TIME_LIMIT, deadline_options,
};
use crate::server::store::flow_jobs::{FlowJob, flow_job, own_field};
use crate::server::store::flow_resolve::Edge as Resolved;
use crate::server::store::lifo::LIFO;
use crate::server::store::metrics::Tally;
use crate::server::store::{NewJob, Store};
use crate::server::store::{Reply, number};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::{DEFAULT_CHECKUP_COUNT, DEFAULT_OUTBOX_COUNT, FLOW_CHECKUP_MS};
use echomq_protocol::arg::{
    DEFAULT_FLOW_PAGE, DEFAULT_MAX_ATTEMPTS, MAX_FLOW_ID, MAX_PRIORITY, MAX_REF,
};
use echomq_protocol::keyspace::{DEPENDENTS_INFIX, DEPS_INFIX};
use echomq_protocol::name::{is_job_id, is_queue_name, resolution_outcome};
use valkey_module::{Context, ValkeyResult, ValkeyString, ValkeyValue};

/// The failure policies `ON_FAILURE` and the bulk form's `on_failure` take.
const POLICIES: &[&str] = &["fail", "ignore", "cancel"];

/// The arguments of one job of a flow, in the order both forms give them.
struct JobArgs {
    id: Vec<u8>,
    reference: Vec<u8>,
    payload: Vec<u8>,
    after: Vec<Vec<u8>>,
    before: Vec<Vec<u8>>,
}

/// One job's arguments from ARGV `at` on: id, ref, payload, after, before.
fn flow_job_args(args: &Args, at: usize) -> Result<JobArgs, valkey_module::ValkeyError> {
    let id = args.id(at, false)?;
    let reference = args.name(at + 1, "ref", MAX_REF)?;
    let payload = args.text(at + 2, "payload")?;
    let own = own_field(args.base(), &id);
    let after = args.edges(at + 3, "after", &own)?;
    let before = args.edges(at + 4, "before", &own)?;
    Ok(JobArgs {
        id,
        reference,
        payload,
        after,
        before,
    })
}

/// A new job, its options not yet read.
fn new_job(id: Vec<u8>, payload: Vec<u8>, priority: u64, attempts: u64) -> NewJob {
    NewJob {
        id,
        payload,
        priority,
        attempts,
        run_at: None,
        repeat: None,
        dedup: None,
        group: None,
        traceparent: None,
        deadlines: Deadlines::default(),
        lifo: false,
        waited: false,
        extra: Vec::new(),
    }
}

/// `EMQ.FLOW.ADD base flow id ref payload after before [PRIORITY p]
/// [ATTEMPTS n] [ON_FAILURE fail|ignore|cancel] [RUN_AT ms] [GROUP g]
/// [TRACE tp] [TIME_LIMIT ms] [LIFO] [START_BY ms | START_WITHIN ms]`.
pub(crate) fn flow_add(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let flow = args.name(1, "flow", MAX_FLOW_ID)?;
    let JobArgs {
        id,
        reference,
        payload,
        after,
        before,
    } = flow_job_args(&args, 2)?;
    let opts = args.options(
        7,
        &[
            PRIORITY,
            ATTEMPTS,
            (
                "ON_FAILURE",
                Opt::Word {
                    arg: "on_failure",
                    words: POLICIES,
                },
            ),
            ("RUN_AT", Opt::RunAt { arg: "run_at" }),
            GROUP,
            TRACE,
            TIME_LIMIT,
            START_BY,
            START_WITHIN,
            LIFO,
        ],
    )?;
    let run_at = opts.run_at("RUN_AT");
    let deadlines = deadline_options(&opts, run_at)?;
    let mut job = new_job(
        id,
        payload,
        opts.int("PRIORITY").unwrap_or(0),
        opts.int("ATTEMPTS").unwrap_or(DEFAULT_MAX_ATTEMPTS),
    );
    job.run_at = run_at;
    job.deadlines = deadlines;
    job.group = opts.text("GROUP").map(<[u8]>::to_vec);
    job.traceparent = opts.text("TRACE").map(<[u8]>::to_vec);
    job.lifo = opts.has("LIFO");
    let policy = opts.text("ON_FAILURE").unwrap_or(b"fail");
    let job = flow_job(job, (&flow, reference, policy), after, before);
    let created = Store::new(ctx, args.base()).add_flow_jobs(&flow, vec![job])?;
    Ok(enqueued_reply(created))
}

/// `EMQ.FLOW.ADD.BULK base flow id ref payload after before priority
/// attempts on_failure [id ref payload after before priority attempts
/// on_failure …]`.
pub(crate) fn flow_add_bulk(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let flow = args.name(1, "flow", MAX_FLOW_ID)?;
    const WIDTH: usize = 8;
    let groups = bulk_groups(args.len() - 1, WIDTH)?;
    let mut jobs: Vec<FlowJob> = Vec::with_capacity(groups);
    for g in 0..groups {
        let at = 2 + g * WIDTH;
        let JobArgs {
            id,
            reference,
            payload,
            after,
            before,
        } = flow_job_args(&args, at)?;
        let priority = args.int_in(at + 5, "priority", 0, MAX_PRIORITY as u64)?;
        let attempts = args.int(at + 6, "attempts", 1)?;
        let policy = args.word(at + 7, "on_failure", POLICIES)?;
        let job = new_job(id, payload, priority, attempts);
        jobs.push(flow_job(job, (&flow, reference, &policy), after, before));
    }
    let created = Store::new(ctx, args.base()).add_flow_jobs(&flow, jobs)?;
    Ok(enqueued_reply(created))
}

/// FLOW.DEPS's and FLOW.DEPENDENTS's arguments: the id, then `CURSOR c`
/// and `COUNT n`.
fn page_args(args: &Args) -> Result<(Vec<u8>, (u64, u64)), valkey_module::ValkeyError> {
    let id = args.id(1, false)?;
    let opts = args.options(
        2,
        &[
            ("CURSOR", Opt::int("cursor", 0)),
            ("COUNT", Opt::int("count", 1)),
        ],
    )?;
    let page = (
        opts.int("CURSOR").unwrap_or(0),
        opts.int("COUNT").unwrap_or(DEFAULT_FLOW_PAGE),
    );
    Ok((id, page))
}

/// `EMQ.FLOW.DEPS base id [CURSOR c] [COUNT n]`.
pub(crate) fn flow_deps(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let (id, page) = page_args(&args)?;
    let store = Store::reader(ctx, args.base());
    let key = store.job_key(&id);
    store.expect_type_of(&key, Kind::Hash)?;
    if !store.exists(&key) {
        return Err(refuse("NOJOB"));
    }
    store.edge_page(DEPS_INFIX, &id, page, false)
}

/// `EMQ.FLOW.DEPENDENTS base id [CURSOR c] [COUNT n]`: readable while the
/// job's dependents outlive its hash (its resolution in the outbox).
pub(crate) fn flow_dependents(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let (id, page) = page_args(&args)?;
    let store = Store::reader(ctx, args.base());
    let key = store.job_key(&id);
    store.expect_type_of(&key, Kind::Hash)?;
    let dependents = [args.base(), DEPENDENTS_INFIX.as_bytes(), &id].concat();
    if !store.exists(&key) && !store.exists(&dependents) {
        return Err(refuse("NOJOB"));
    }
    store.edge_page(DEPENDENTS_INFIX, &id, page, true)
}

/// `EMQ.FLOW.OUTBOX base [COUNT n] [JOBS id [id …]]` → array of `[id,
/// text, [queue, dependent, …]]`.
pub(crate) fn flow_outbox(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let opts = args.options(
        1,
        &[
            ("COUNT", Opt::int("count", 1)),
            ("JOBS", Opt::Ids { arg: "jobs" }),
        ],
    )?;
    let count = opts.int("COUNT").unwrap_or(DEFAULT_OUTBOX_COUNT);

    let store = Store::reader(ctx, args.base());
    let outbox = store.key(QueueKey::Resolutions);
    store.expect_type_of(outbox, Kind::Zset)?;
    // Each resolution has a dependent not told: COUNT of them are enough.
    let ids = match opts.ids("JOBS") {
        Some(ids) => ids.to_vec(),
        None => store.zrange(outbox, Bound::LOWEST, Bound::HIGHEST, count)?,
    };
    let (mut reply, mut listed) = (Vec::new(), 0u64);
    for id in ids {
        if listed >= count {
            break;
        }
        if !store.in_outbox(&id)? {
            continue;
        }
        let (resolution, told) = (store.resolution_key(&id), store.dependents_key(&id));
        store.expect_type_of(&resolution, Kind::Hash)?;
        store.expect_type_of(&told, Kind::Hash)?;
        let mut untold = Vec::new();
        let fields = store.read("HGETALL", &[&told])?.items();
        for pair in fields.chunks(2) {
            if listed >= count {
                break;
            }
            let [Reply::Bytes(field), Reply::Bytes(value)] = pair else {
                continue;
            };
            let space = field.iter().position(|b| *b == b' ');
            if let (b"0", Some(space)) = (value.as_slice(), space) {
                untold.push(bulk(&field[..space]));
                untold.push(bulk(&field[space + 1..]));
                listed += 1;
            }
        }
        let text = store.hget(&resolution, b"text")?.unwrap_or_default();
        reply.push(ValkeyValue::Array(vec![
            bulk(id),
            bulk(text),
            ValkeyValue::Array(untold),
        ]));
    }
    Ok(ValkeyValue::Array(reply))
}

/// One group of FLOW.ACK: the dependency's id and the field
/// `<queue> <dependent>` of its `dependents:<id>`.
struct Edge {
    id: Vec<u8>,
    field: Vec<u8>,
}

/// `EMQ.FLOW.ACK base id queue dependent [id queue dependent …]` → the
/// number of fields changed.
pub(crate) fn flow_ack(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    if args.len() == 0 || !args.len().is_multiple_of(3) {
        return Err(refuse("BADARG edges"));
    }
    let mut edges = Vec::with_capacity(args.len() / 3);
    for at in (1..=args.len()).step_by(3) {
        let id = args.id(at, false)?;
        let queue = args.get(at + 1).unwrap_or_default();
        if !is_queue_name(queue) {
            return Err(refuse("BADARG queue"));
        }
        let dependent = args.get(at + 2).unwrap_or_default();
        if !is_job_id(dependent) || dependent == b"*" {
            return Err(refuse("BADARG dependent"));
        }
        edges.push(Edge {
            id,
            field: [queue, b" ", dependent].concat(),
        });
    }

    let store = Store::new(ctx, args.base());
    // Every key's type before the first write.
    let outbox = store.key(QueueKey::Resolutions);
    store.expect_type_of(outbox, Kind::Zset)?;
    for edge in &edges {
        store.expect_type_of(&store.dependents_key(&edge.id), Kind::Hash)?;
        store.expect_type_of(&store.resolution_key(&edge.id), Kind::Hash)?;
        store.expect_type_of(&store.job_key(&edge.id), Kind::Hash)?;
    }
    let mut changed = 0;
    for edge in &edges {
        let told = store.dependents_key(&edge.id);
        if store.hget(&told, &edge.field)?.as_deref() != Some(b"0") {
            continue;
        }
        store.hset(&told, &[&edge.field, b"1"])?;
        changed += 1;
        let resolution = store.resolution_key(&edge.id);
        if store.exists(&resolution) {
            let left = number(store.hget(&resolution, b"left")?.as_deref()).unwrap_or(0) - 1;
            store.acknowledged(&edge.id, left, None)?;
        }
    }
    Ok(int(changed))
}

/// `EMQ.FLOW.RESOLVE base queue dependency resolution dependent [queue
/// dependency resolution dependent …]` → one word per group.
pub(crate) fn flow_resolve(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    if args.len() == 0 || !args.len().is_multiple_of(4) {
        return Err(refuse("BADARG edges"));
    }
    let mut edges = Vec::with_capacity(args.len() / 4);
    for at in (1..=args.len()).step_by(4) {
        let queue = args.get(at).unwrap_or_default();
        if !is_queue_name(queue) {
            return Err(refuse("BADARG queue"));
        }
        let dependency = args.get(at + 1).unwrap_or_default();
        if !is_job_id(dependency) || dependency == b"*" {
            return Err(refuse("BADARG dependency"));
        }
        let text = args.get(at + 2).unwrap_or_default();
        let Some(outcome) = resolution_outcome(text) else {
            return Err(refuse("BADARG resolution"));
        };
        let dependent = args.get(at + 3).unwrap_or_default();
        if !is_job_id(dependent) || dependent == b"*" {
            return Err(refuse("BADARG dependent"));
        }
        edges.push(Resolved {
            field: [queue, b" ", dependency].concat(),
            text: text.to_vec(),
            outcome: outcome.to_vec(),
            dependent: dependent.to_vec(),
        });
    }

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    store.open_outbox(&conf)?;
    store.expect_types(&[
        (QueueKey::Seq, Kind::String),
        (QueueKey::Pending, Kind::Zset),
        (QueueKey::Fifo, Kind::List),
        (QueueKey::Schedule, Kind::Zset),
        (QueueKey::Blocked, Kind::Zset),
        (QueueKey::Dead, Kind::Zset),
        (QueueKey::Cancelled, Kind::Zset),
        (QueueKey::Signal, Kind::Zset),
        (QueueKey::Events, Kind::Stream),
    ])?;
    store.expect_deadlines_type(conf.timed)?;
    store.read_group(conf.groups, true, None)?;
    for edge in &edges {
        store.expect_edge_types(&conf, edge)?;
    }
    let now = now_ms();
    store.expect_metrics_types(&conf, now)?;

    let (mut tally, mut held) = (Tally::default(), Vec::new());
    let mut words = Vec::with_capacity(edges.len());
    for edge in &edges {
        words.push(bulk(store.resolve_edge(
            &conf,
            edge,
            now,
            (&mut tally, &mut held),
        )?));
    }
    store.unblock_held(&conf, held, now)?;
    if conf.metrics {
        store.record_metrics(&conf, &tally, now)?;
    }
    Ok(ValkeyValue::Array(words))
}

/// `EMQ.FLOW.WAIT base id token queue dependency [queue dependency …]` →
/// `blocked` or `ready`.
pub(crate) fn flow_wait(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    if args.len() < 4 || !args.len().is_multiple_of(2) {
        return Err(refuse("BADARG edges"));
    }
    let id = args.id(1, false)?;
    let token = args.int(2, "token", 0)?;
    let own = own_field(args.base(), &id);
    let (mut named, mut seen) = (Vec::new(), std::collections::HashSet::new());
    for at in (3..=args.len()).step_by(2) {
        let queue = args.get(at).unwrap_or_default();
        if !is_queue_name(queue) {
            return Err(refuse("BADARG queue"));
        }
        let dependency = args.get(at + 1).unwrap_or_default();
        let field = [queue, b" ", dependency].concat();
        if !is_job_id(dependency) || dependency == b"*" || field == own {
            return Err(refuse("BADARG dependency"));
        }
        if seen.insert(field.clone()) {
            named.push(field);
        }
    }
    let waited = Store::new(ctx, args.base()).wait_for(&id, token, &named)?;
    Ok(bulk(waited.word()))
}

/// `EMQ.FLOW.LINK base id queue dependent [queue dependent …]` →
/// `[waiting]` or `[decided, text]`.
pub(crate) fn flow_link(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    if args.len() < 3 || args.len().is_multiple_of(2) {
        return Err(refuse("BADARG edges"));
    }
    let mut fields = Vec::with_capacity(args.len() / 2);
    for at in (2..=args.len()).step_by(2) {
        let queue = args.get(at).unwrap_or_default();
        if !is_queue_name(queue) {
            return Err(refuse("BADARG queue"));
        }
        let dependent = args.get(at + 1).unwrap_or_default();
        if !is_job_id(dependent) || dependent == b"*" {
            return Err(refuse("BADARG dependent"));
        }
        fields.push([queue, b" ", dependent].concat());
    }
    let linked = Store::new(ctx, args.base()).link(&id, &fields, now_ms())?;
    Ok(linked.reply())
}

/// `EMQ.FLOW.CHECKUP base [COUNT n] [AGAIN ms]` → array of `[id, [queue,
/// dependency, …]]`.
pub(crate) fn flow_checkup(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let opts = args.options(
        1,
        &[
            ("COUNT", Opt::int("count", 1)),
            ("AGAIN", Opt::int("again", 1)),
        ],
    )?;
    let count = opts.int("COUNT").unwrap_or(DEFAULT_CHECKUP_COUNT);
    let again = opts.int("AGAIN").unwrap_or(FLOW_CHECKUP_MS);
    Store::new(ctx, args.base()).checkup(count, again, now_ms())
}
