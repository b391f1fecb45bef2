//! `EMQ.FLOW.SETTLE` (docs/protocol.md, "Deciding a job that has
//! dependents"): the native twin of `crates/echomq/scripts/flow_settle.lua`,
//! same checks in the same order, same writes, reply and events. A
//! completed job's dependents in its own queue past COMPLETE's budget,
//! taken as COMPLETE takes the first (`Store::take_own_names`), in `HSCAN`
//! pages from where the last call stopped.

use crate::server::args::{Args, Opt};
use crate::server::clock::now_ms;
use crate::server::key::Kind;
use crate::server::replicate;
use crate::server::reply::int;
use crate::server::store::flow_resolve::Unblocking;
use crate::server::store::outbox::Due;
use crate::server::store::{DependentsRead, Settings, Store, number, zero_fields};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::{FLOW_INLINE_EDGES, FLOW_SETTLE_PAGE_MIN, SCAN_CURSOR_DIGITS};
use valkey_module::{Context, ValkeyError, ValkeyResult, ValkeyString, ValkeyValue};

/// What a resolution's text starts with when FLOW.SETTLE may take it.
const COMPLETED: &[u8] = b"completed ";

/// `EMQ.FLOW.SETTLE base id [COUNT n]` → `[told, resolved, unblocked]`.
pub(crate) fn flow_settle(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    let opts = args.options(2, &[("COUNT", Opt::int("count", 1))])?;
    let count = opts.int("COUNT").unwrap_or(FLOW_INLINE_EDGES);

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    let (resolution, told) = (store.resolution_key(&id), store.dependents_key(&id));
    store.expect_type_of(store.key(QueueKey::Resolutions), Kind::Zset)?;
    store.expect_type_of(&resolution, Kind::Hash)?;
    store.expect_type_of(&told, Kind::Hash)?;
    store.expect_type_of(&store.job_key(&id), Kind::Hash)?;
    store.expect_types(&[
        (QueueKey::Seq, Kind::String),
        (QueueKey::Events, Kind::Stream),
    ])?;
    // COMPLETE's checks on a flows queue (a queue without the mark has no
    // resolution to settle, and writes nothing below).
    store.expect_own_edge_types(&conf)?;
    if conf.groups {
        store.expect_group_keys(true, true)?;
    }
    if !conf.flows || !store.in_outbox(&id)? {
        return Ok(counts(0, 0, 0));
    }
    let [text, left, cursor] = store.hmget_n(&resolution, [b"text", b"left", b"cursor"])?;
    let Some(text) = text.filter(|text| text.starts_with(COMPLETED)) else {
        return Ok(counts(0, 0, 0));
    };
    let mut due = Due::written(number(left.as_deref()).unwrap_or(0), Vec::new());
    let (mut budget, mut held, mut read) = (count, Vec::new(), DependentsRead::default());
    let settling = Settling {
        store: &store,
        conf: &conf,
        id: &id,
        told: &told,
        text: &text,
    };
    let taking = (&mut held, &mut read);
    let (took, cursor) = match replicate::carried_order(&id) {
        // A replay takes the fields its primary looked at, and its cursor.
        Some(order) => {
            let names: Vec<&[u8]> = order.fields.iter().map(Vec::as_slice).collect();
            let (took, ..) = settling.take(&names, &mut due, &mut budget, taking)?;
            (took, order.cursor.unwrap_or_else(|| b"0".to_vec()))
        }
        None => settling.pages(start_cursor(cursor), &mut due, &mut budget, taking)?,
    };
    let unblocked = held.len() as u64;
    store.unblock_held(&conf, held, now_ms())?;
    let told = count - budget;
    if told > 0 {
        store.acknowledged(&id, due.left(), Some(&cursor))?;
    }
    Ok(counts(told, took, unblocked))
}

/// The resolution's `cursor`: 0 when absent or not a cursor (at most
/// SCAN_CURSOR_DIGITS digits).
fn start_cursor(cursor: Option<Vec<u8>>) -> Vec<u8> {
    cursor
        .filter(|c| (1..=SCAN_CURSOR_DIGITS as usize).contains(&c.len()))
        .filter(|c| c.iter().all(u8::is_ascii_digit))
        .unwrap_or_else(|| b"0".to_vec())
}

/// A FLOW.SETTLE of job `id`'s `completed` resolution `text`, its
/// dependents hash `told`.
struct Settling<'a> {
    store: &'a Store<'a>,
    conf: &'a Settings,
    id: &'a [u8],
    told: &'a [u8],
    text: &'a [u8],
}

/// The call's dependents to unblock, and the dependents it read.
type Taking<'t> = (&'t mut Vec<Unblocking>, &'t mut DependentsRead);

impl Settling<'_> {
    /// `names` taken as COMPLETE takes its own queue's: how many took it,
    /// how many of this queue were looked at, and whether the budget ran
    /// out before one.
    fn take(
        &self,
        names: &[&[u8]],
        due: &mut Due,
        budget: &mut u64,
        (held, read): Taking<'_>,
    ) -> Result<(u64, usize, bool), ValkeyError> {
        let (conf, pair) = (self.conf, (self.id, names));
        self.store
            .take_own_names(conf, pair, due, self.text, budget, (held, read))
    }

    /// The pages of `dependents:<id>` from `start` (`own_edges.completed`
    /// a page, each page's told fields written before the next is read)
    /// while the budget lasts: a page the budget stopped in is read again
    /// by the next call; a call stops when nothing is left to tell, and
    /// one that started past 0 goes on once from 0 to the end. Answers how
    /// many took it and the cursor the next call starts at; the fields
    /// looked at, and that cursor, travel to the replay.
    fn pages(
        &self,
        start: Vec<u8>,
        due: &mut Due,
        budget: &mut u64,
        (held, read): Taking<'_>,
    ) -> Result<(u64, Vec<u8>), ValkeyError> {
        let (mut cursor, mut wrapped) = (start.clone(), false);
        let (mut took, mut looked_at) = (0, Vec::new());
        loop {
            let page = (*budget).max(FLOW_SETTLE_PAGE_MIN);
            let (next, items) = self.store.hscan(self.told, &cursor, page)?;
            let names = zero_fields(&items);
            let (page_took, looked, stopped) =
                self.take(&names, due, budget, (&mut *held, &mut *read))?;
            took += page_took;
            let own = self.store.own_names(self.id, &names).take(looked);
            looked_at.extend(own.map(<[u8]>::to_vec));
            if stopped {
                break;
            }
            cursor = next;
            if *budget == 0 || due.left() < 1 {
                break;
            }
            if cursor == b"0" {
                if start == b"0" || wrapped {
                    break;
                }
                wrapped = true;
            }
        }
        if !looked_at.is_empty() {
            replicate::record_order(self.id, Some(cursor.clone()), looked_at);
        }
        Ok((took, cursor))
    }
}

/// The reply: `[told, resolved, unblocked]`.
fn counts(told: u64, resolved: u64, unblocked: u64) -> ValkeyValue {
    ValkeyValue::Array([told, resolved, unblocked].map(|n| int(n as i64)).to_vec())
}
