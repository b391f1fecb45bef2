//! Over dependencies (flows, docs/protocol.md "Flows"): FLOW.ADD (and
//! FLOW.ADD.BULK), FLOW.DEPS and FLOW.DEPENDENTS — each the native twin of
//! its script in `crates/echomq/scripts/`, same checks in the same order,
//! same writes, replies and events. The bodies are in
//! `server/store/flow_jobs.rs`.

use crate::server::args::{ATTEMPTS, Args, GROUP, Opt, PRIORITY, TRACE, bulk_groups, refuse};
use crate::server::key::Kind;
use crate::server::reply::enqueued_reply;
use crate::server::store::deadlines::{
    Deadlines, START_BY, START_WITHIN, TIME_LIMIT, deadline_options,
};
use crate::server::store::flow_jobs::{FlowJob, flow_job, own_field};
use crate::server::store::lifo::LIFO;
use crate::server::store::{NewJob, Store};
use echomq_protocol::arg::{
    DEFAULT_FLOW_PAGE, DEFAULT_MAX_ATTEMPTS, MAX_FLOW_ID, MAX_PRIORITY, MAX_REF,
};
use echomq_protocol::keyspace::{DEPENDENTS_INFIX, DEPS_INFIX};
use valkey_module::{Context, ValkeyResult, ValkeyString};

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
