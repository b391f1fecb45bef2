//! Edges of dependents in the command's own queue taking their
//! dependencies' resolutions (docs/protocol.md, "Flows";
//! `scripts/include/flow_jobs.lua`): what a group of FLOW.RESOLVE does to
//! its edge, and COMPLETE's dependents in its own queue, resolved in its
//! own call ("Deciding a job that has dependents").

use super::outbox::Due;
use super::{Settings, Store};
use crate::server::fast_hash::FastMap;
use crate::server::key::Kind;
use crate::server::replicate;
use crate::server::store::flow_resolve::{Edge, Unblocking};
use crate::server::store::number;
use crate::server::store::{Reply, flow_jobs::own_field};
use echomq_protocol::QueueKey;
use valkey_module::ValkeyError;

/// An edge that took its resolution: the dependent's fields (state,
/// deps_left, on_failure, priority, group, run_at, failures, dedup,
/// dedup_mode), its `waited` and `dependents`, and its deps_left after the
/// edge.
pub(crate) struct Took {
    pub fields: [Option<Vec<u8>>; 9],
    pub waited: Option<Vec<u8>>,
    pub dependents: Option<Vec<u8>>,
    pub left: i64,
}

/// The dependents a call's own-queue edges read (`own_edges.reads`), by
/// id: each one's fields as first read, its deps_left as the call's takes
/// lowered it, so a fan-in's last job met by every completion of a batch
/// is read once.
pub(crate) type DependentsRead = FastMap<Vec<u8>, Took>;

/// The dependent's fields an edge reads (`flow_jobs.edge_reads`).
const DEPENDENT_FIELDS: [&[u8]; 9] = [
    b"state",
    b"deps_left",
    b"on_failure",
    b"priority",
    b"group",
    b"run_at",
    b"failures",
    b"dedup",
    b"dedup_mode",
];

impl Store<'_> {
    /// Edge `edge` takes its resolution, as a group of FLOW.RESOLVE
    /// (`flow_jobs.take`): `gone` (no job, or no such field in its deps
    /// hash) or `already` (the field is not `wait`); else the field takes
    /// the text, deps_left − 1 and the event `dependency_resolved`.
    pub(crate) fn take_edge(
        &self,
        conf: &Settings,
        edge: &Edge,
    ) -> Result<Result<Took, &'static str>, ValkeyError> {
        if let Err(word) = self.edge_field_taken(edge, false)? {
            return Ok(Err(word));
        }
        let mut took = self.dependent_fields(conf, &edge.dependent)?;
        self.lower_deps_left(conf, edge, &mut took, false)?;
        Ok(Ok(took))
    }

    /// [`Store::take_edge`] for an edge of COMPLETE or FLOW.SETTLE, its
    /// dependent's fields kept in `read` for the call's next edges to it:
    /// answers the dependent to unblock when this was its last edge and it
    /// is blocked.
    fn take_own_edge(
        &self,
        conf: &Settings,
        edge: &Edge,
        read: &mut DependentsRead,
    ) -> Result<Result<Option<Unblocking>, &'static str>, ValkeyError> {
        let known = read.contains_key(&edge.dependent);
        if let Err(word) = self.edge_field_taken(edge, known)? {
            return Ok(Err(word));
        }
        if !known {
            let took = self.unblocking_fields(conf, &edge.dependent)?;
            read.insert(edge.dependent.clone(), took);
        }
        let took = read.get_mut(&edge.dependent).expect("read above");
        self.lower_deps_left(conf, edge, took, true)?;
        let [state, _, _, priority, group, run_at, ..] = &took.fields;
        if state.as_deref() != Some(b"blocked") || took.left != 0 {
            return Ok(Ok(None));
        }
        let group = group.as_deref().filter(|_| conf.groups);
        let priority = number(priority.as_deref()).unwrap_or(0);
        Ok(Ok(Some(Unblocking::new(
            &edge.dependent,
            priority,
            group,
            run_at.as_deref(),
        ))))
    }

    /// An edge's field of its dependent's deps hash: `gone` (no job, unless
    /// `known` to exist, or no such field) or `already` (not `wait`);
    /// else it takes the edge's text.
    fn edge_field_taken(
        &self,
        edge: &Edge,
        known: bool,
    ) -> Result<Result<(), &'static str>, ValkeyError> {
        let deps = self.deps_key(&edge.dependent);
        let value = if known || self.exists(&self.job_key(&edge.dependent)) {
            self.hget_value(&deps, &self.text(&edge.field))?
        } else {
            None
        };
        match value.as_deref() {
            None => return Ok(Err("gone")),
            Some(b"wait") => {}
            Some(_) => return Ok(Err("already")),
        }
        self.hset_data(&deps, &[&edge.field, &edge.text])?;
        Ok(Ok(()))
    }

    /// The fields of dependent `id` an edge reads, as a [`Took`] whose
    /// `left` is still to be lowered.
    fn dependent_fields(&self, conf: &Settings, id: &[u8]) -> Result<Took, ValkeyError> {
        let (fields, waited, dependents) = self.job_fields_waited(
            (conf.waited, conf.flows),
            &self.job_key(id),
            DEPENDENT_FIELDS,
        )?;
        Ok(Took {
            fields,
            waited,
            dependents,
            left: 0,
        })
    }

    /// The fields of dependent `id` an own-queue edge reads (state,
    /// deps_left, priority, run_at, and its group on a queue with groups),
    /// as a [`Took`] whose other fields are none: a completed dependency
    /// decides no dependent, so only the unblocking reads the job.
    fn unblocking_fields(&self, conf: &Settings, id: &[u8]) -> Result<Took, ValkeyError> {
        let names: &[&[u8]] = if conf.groups {
            &[b"state", b"deps_left", b"priority", b"run_at", b"group"]
        } else {
            &[b"state", b"deps_left", b"priority", b"run_at"]
        };
        let mut values = self.hmget(&self.job_key(id), names)?.into_iter();
        let mut next = || values.next().flatten();
        let (state, left, priority, run_at, group) = (next(), next(), next(), next(), next());
        Ok(Took {
            fields: [state, left, None, priority, group, run_at, None, None, None],
            waited: None,
            dependents: None,
            left: 0,
        })
    }

    /// Edge `edge` lowers its dependent's deps_left (`took`'s, kept
    /// up to date), and the event `dependency_resolved`. With `unblocking`
    /// (an own-queue edge, whose last one unblocks a blocked dependent),
    /// a blocked dependent's last edge leaves the write to
    /// [`Store::unblock_held`], as `flow_jobs.take` does.
    fn lower_deps_left(
        &self,
        conf: &Settings,
        edge: &Edge,
        took: &mut Took,
        unblocking: bool,
    ) -> Result<(), ValkeyError> {
        let left = (number(took.fields[1].as_deref()).unwrap_or(0) - 1).max(0);
        let text = left.to_string();
        let blocked = took.fields[0].as_deref() == Some(b"blocked");
        if !(unblocking && blocked && left == 0) {
            self.hset(
                &self.job_key(&edge.dependent),
                &[b"deps_left", text.as_bytes()],
            )?;
        }
        took.fields[1] = Some(text.into_bytes());
        took.left = left;
        self.emit(
            conf.events_max,
            &[
                b"event",
                b"dependency_resolved",
                b"id",
                &edge.dependent,
                b"dependency",
                &edge.field,
                b"outcome",
                &edge.outcome,
            ],
        )
    }

    /// On a queue with the flows mark, before COMPLETE's first write
    /// (`own_edges.expect`): the types of the keys its own-queue
    /// dependents' edges may write besides the job's.
    pub(crate) fn expect_own_edge_types(&self, conf: &Settings) -> Result<(), ValkeyError> {
        if !conf.flows {
            return Ok(());
        }
        self.expect_types(&[
            (QueueKey::Blocked, Kind::Zset),
            (QueueKey::Schedule, Kind::Zset),
            (QueueKey::Signal, Kind::Zset),
            (QueueKey::Pending, Kind::Zset),
        ])?;
        if conf.timed {
            self.expect_types(&[(QueueKey::Deadlines, Kind::Zset)])?;
        }
        Ok(())
    }

    /// Whether each key the completed edge of dependent `id` may write is
    /// absent or of its type, after COMPLETE's first write
    /// (`flow_jobs.typed`): its hash and deps hash, its group's lane and
    /// state on a queue with groups. An edge failing it is left to the
    /// outbox.
    fn own_edge_typed(&self, conf: &Settings, id: &[u8]) -> Result<bool, ValkeyError> {
        let key = self.job_key(id);
        if !self.absent_or(&key, Kind::Hash) || !self.absent_or(&self.deps_key(id), Kind::Hash) {
            return Ok(false);
        }
        let group = if conf.groups {
            self.hget(&key, b"group")?
        } else {
            None
        };
        Ok(group.is_none_or(|group| {
            self.absent_or(&self.lane_key(&group), Kind::Zset)
                && self.absent_or(&self.group_key(&group), Kind::Hash)
        }))
    }

    /// COMPLETE's dependents in its own queue (`own_edges.completed`): each
    /// `0` field of `dependents:<id>`, as `due` read it before the
    /// command's first write, naming a job of this queue, taken as
    /// [`Store::take_own_names`] takes them, in the order the server lists
    /// the hash: a replay's in its primary's (a hashtable's order follows
    /// each server's hash seed). Answers how many of the told took it.
    pub(crate) fn complete_own_edges(
        &self,
        conf: &Settings,
        id: &[u8],
        due: &mut Due,
        text: &[u8],
        budget: &mut u64,
        taking: (&mut Vec<Unblocking>, &mut DependentsRead),
    ) -> Result<u64, ValkeyError> {
        let fields = due.take_fields();
        let carried = replicate::carried_order(id);
        let names = match &carried {
            Some(order) => order.fields.iter().map(Vec::as_slice).collect(),
            None => zero_fields(&fields),
        };
        let (took, looked, _) =
            self.take_own_names(conf, (id, &names), due, text, budget, taking)?;
        // One field has one order; a larger hash's travels to the replay.
        if carried.is_none() && fields.len() > 2 && looked > 0 {
            let looked_at = self.own_names(id, &names).take(looked);
            replicate::record_order(id, None, looked_at.map(<[u8]>::to_vec).collect());
        }
        Ok(took)
    }

    /// The names among `names` of a job of this queue, dependents of `id`.
    pub(crate) fn own_names<'n>(
        &self,
        id: &[u8],
        names: &'n [&'n [u8]],
    ) -> impl Iterator<Item = &'n [u8]> + use<'n> {
        let field = own_field(self.base(), id);
        let here = field[..field.len() - id.len()].to_vec();
        names
            .iter()
            .copied()
            .filter(move |name| name.starts_with(&here))
    }

    /// Job `id`'s dependents `names` (fields of `dependents:<id>`, in
    /// order) naming a job of this queue, while `budget` lasts and their
    /// keys are typed, take `text` as a group of FLOW.RESOLVE would (a
    /// blocked dependent at its last edge held in `held`, to be unblocked
    /// once every edge of the call is taken) and are told (1), lowering
    /// `due`'s count and `budget`; the told fields are written at once, and
    /// `read` keeps the dependents' fields for the call's next edges.
    /// Answers how many of the told took it (the others were resolved
    /// already, or their dependent is gone), how many names of this queue
    /// it looked at, and whether the budget ran out before one of them.
    pub(crate) fn take_own_names(
        &self,
        conf: &Settings,
        (id, names): (&[u8], &[&[u8]]),
        due: &mut Due,
        text: &[u8],
        budget: &mut u64,
        (held, read): (&mut Vec<Unblocking>, &mut DependentsRead),
    ) -> Result<(u64, usize, bool), ValkeyError> {
        let field = own_field(self.base(), id);
        let here = &field[..field.len() - id.len()];
        let (mut took, mut told, mut looked) = (0, Vec::new(), 0);
        let mut stopped = false;
        for name in names {
            let Some(dependent) = name.strip_prefix(here) else {
                continue;
            };
            if *budget == 0 {
                stopped = true;
                break;
            }
            looked += 1;
            if !self.own_edge_typed(conf, dependent)? {
                continue;
            }
            let edge = Edge {
                field: field.clone(),
                text: text.to_vec(),
                outcome: b"completed".to_vec(),
                dependent: dependent.to_vec(),
            };
            if let Ok(unblocking) = self.take_own_edge(conf, &edge, read)? {
                took += 1;
                held.extend(unblocking);
            }
            told.extend([*name, b"1"]);
            due.tell_one();
            *budget -= 1;
        }
        if !told.is_empty() {
            self.hset_data(&self.dependents_key(id), &told)?;
        }
        Ok((took, looked, stopped))
    }
}

/// The `0` fields of a hash read as fields and values by turns.
pub(crate) fn zero_fields(fields: &[Reply]) -> Vec<&[u8]> {
    fields
        .chunks(2)
        .filter_map(|pair| match pair {
            [Reply::Bytes(name), Reply::Bytes(value)] if value == b"0" => Some(name.as_slice()),
            _ => None,
        })
        .collect()
}
