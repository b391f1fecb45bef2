//! Groups (`docs/protocol.md`, "Groups"): the lanes and their bookkeeping
//! every transition shares — the group helpers of
//! `scripts/include/groups.lua`, each the twin of its Lua function. The
//! per-group commands are in `commands/group.rs`, the claim's round robin
//! in `round_robin.rs`.

use crate::server::fast_hash::FastMap;
use crate::server::key::{Bound, Kind};
use crate::server::store::fifo::by_fifo;
use crate::server::store::flow::rate_window;
use crate::server::store::{Limit, Store, flow_setting};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::GROUPED_OFFSET;
use echomq_protocol::keyspace::{GROUP_INFIX, LANE_INFIX, UNGROUPED};
use valkey_module::ValkeyError;

/// The `{}` lane of the ready set: the ungrouped pending jobs.
pub(crate) const UNGROUPED_LANE: &[u8] = UNGROUPED.as_bytes();

/// A group's state and settings (`group_state`), each 0 when absent.
#[derive(Debug, Clone, Default)]
pub(crate) struct GroupState {
    pub active: i64,
    pub paused: bool,
    pub concurrency: i64,
    /// The group's rate limit and its window (`limit_*` of its hash).
    pub limit: Limit,
}

/// Where a group belongs (`group_place`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// In the ready set.
    Ready,
    /// In the wait set, until its window reopens at this ms.
    Wait(i64),
    /// In neither: no jobs in its lane, paused, or at its cap.
    Nowhere,
}

impl GroupState {
    /// Where the group belongs at `now` (`group_place`).
    pub(crate) fn place(&self, now: u64, has_jobs: bool) -> Place {
        if !has_jobs || self.paused || (self.concurrency > 0 && self.active >= self.concurrency) {
            return Place::Nowhere;
        }
        match rate_window(&self.limit, now) {
            Some((window, used)) if used >= self.limit.max => Place::Wait(window + self.limit.per),
            _ => Place::Ready,
        }
    }
}

impl Store<'_> {
    /// `<base>:glane:<group>`.
    pub(crate) fn lane_key(&self, group: &[u8]) -> Vec<u8> {
        [self.base(), LANE_INFIX.as_bytes(), group].concat()
    }

    /// `<base>:group:<group>`.
    pub(crate) fn group_key(&self, group: &[u8]) -> Vec<u8> {
        [self.base(), GROUP_INFIX.as_bytes(), group].concat()
    }

    /// Checks the types of the queue's group keys, and of pending and the
    /// signal key when the command writes them (`expect_group_keys`).
    pub(crate) fn expect_group_keys(&self, pending: bool, signal: bool) -> Result<(), ValkeyError> {
        self.expect_types(&[
            (QueueKey::Groups, Kind::Zset),
            (QueueKey::GroupsWait, Kind::Zset),
            (QueueKey::GroupIndex, Kind::Zset),
        ])?;
        if pending {
            self.expect_types(&[(QueueKey::Pending, Kind::Zset)])?;
        }
        if signal {
            self.expect_types(&[(QueueKey::Signal, Kind::Zset)])?;
        }
        Ok(())
    }

    /// A group's state, read once per command (the HMGET checks the hash's
    /// type) (`group_state`).
    pub(crate) fn group_state(&self, group: &[u8]) -> Result<GroupState, ValkeyError> {
        if let Some(st) = self.cached_group(group) {
            return Ok(st);
        }
        let [active, paused, concurrency, max, per, window, used] = self.hmget_n(
            &self.group_key(group),
            [
                b"active",
                b"paused",
                b"concurrency",
                b"limit_max",
                b"limit_per",
                b"limit_window",
                b"limit_used",
            ],
        )?;
        let flow = |value: Option<Vec<u8>>| flow_setting(value.as_deref());
        let st = GroupState {
            active: flow(active),
            paused: paused.as_deref() == Some(b"1"),
            concurrency: flow(concurrency),
            limit: Limit {
                max: flow(max),
                per: flow(per),
                window: flow(window),
                used: flow(used),
                hold: 0,
            },
        };
        self.cache_group(group, st.clone());
        Ok(st)
    }

    /// A group whose lane the command may write: its lane's type checked,
    /// its state read (`read_lane`).
    pub(crate) fn read_lane(&self, group: &[u8]) -> Result<GroupState, ValkeyError> {
        self.expect_type_of(&self.lane_key(group), Kind::Zset)?;
        self.group_state(group)
    }

    /// The active jobs of each group, in one pass over the active set
    /// (`active_by_group`): what a group without a cap counts as active.
    pub(crate) fn active_by_group(&self) -> Result<FastMap<Vec<u8>, i64>, ValkeyError> {
        let active = self.key(QueueKey::Active);
        let mut counts: FastMap<Vec<u8>, i64> = FastMap::default();
        for id in self.zrange(active, Bound::LOWEST, Bound::HIGHEST, u64::MAX)? {
            if let Some(group) = self.hget(&self.job_key(&id), b"group")? {
                *counts.entry(group).or_default() += 1;
            }
        }
        Ok(counts)
    }

    /// A group's active jobs: its `active` under a cap, else counted in
    /// the active set.
    pub(crate) fn group_active(&self, group: &[u8], st: &GroupState) -> Result<i64, ValkeyError> {
        if st.concurrency > 0 {
            return Ok(st.active);
        }
        Ok(self.active_by_group()?.get(group).copied().unwrap_or(0))
    }

    /// Marks the queue once a group gets a cap or a rate limit
    /// (`mark_group_flow`).
    pub(crate) fn mark_group_flow(&self, marked: bool) -> Result<(), ValkeyError> {
        if !marked {
            self.hset(self.key(QueueKey::Meta), &[b"group_flow", b"1"])?;
        }
        Ok(())
    }

    /// The turn of a lane joining the ready set: 1 + the highest
    /// (`next_turn`).
    pub(crate) fn next_turn(&self) -> Result<i64, ValkeyError> {
        Ok(self
            .zlast_score(self.key(QueueKey::Groups))?
            .map_or(1, |score| score as i64 + 1))
    }

    /// Puts a group where it belongs (`place`).
    pub(crate) fn place(
        &self,
        group: &[u8],
        st: &GroupState,
        now: u64,
        has_jobs: bool,
    ) -> Result<(), ValkeyError> {
        let (groups, waiting) = (self.key(QueueKey::Groups), self.key(QueueKey::GroupsWait));
        match st.place(now, has_jobs) {
            Place::Ready => {
                self.zrem(waiting, &[group])?;
                if self.zscore(groups, &self.text(group))?.is_none() {
                    let turn = self.next_turn()?;
                    self.zadd(groups, &[(turn, group)])?;
                    self.signal(0)?;
                }
            }
            Place::Wait(reopen) => {
                self.zrem(groups, &[group])?;
                self.zadd(waiting, &[(reopen, group)])?;
            }
            Place::Nowhere => {
                self.zrem(groups, &[group])?;
                self.zrem(waiting, &[group])?;
            }
        }
        Ok(())
    }

    /// Keeps the index exact: a group is listed iff its lane or hash exists
    /// (`index_group`).
    pub(crate) fn index_group(&self, group: &[u8]) -> Result<(), ValkeyError> {
        let index = self.key(QueueKey::GroupIndex);
        if self.exists(&self.lane_key(group)) || self.exists(&self.group_key(group)) {
            self.zadd_new(index, 0, group)?;
        } else {
            self.zrem(index, &[group])?;
        }
        Ok(())
    }

    /// A group's settings changed (`group_changed`).
    pub(crate) fn group_changed(
        &self,
        group: &[u8],
        st: &GroupState,
        now: u64,
    ) -> Result<(), ValkeyError> {
        let has_jobs = self.exists(&self.lane_key(group));
        self.place(group, st, now, has_jobs)?;
        self.index_group(group)
    }

    /// Sets the groups mark on the first grouped job, before anything of
    /// its call enters pending, and moves `fifo` into `pending` (a queue
    /// with groups keeps no fifo); ungrouped jobs pending make the `{}`
    /// lane ready (`mark_groups`). Returns the mark, now set.
    pub(crate) fn mark_groups(&self, marked: bool) -> Result<bool, ValkeyError> {
        if marked {
            return Ok(true);
        }
        self.hset(self.key(QueueKey::Meta), &[b"groups", b"1"])?;
        self.fifo_into_pending()?;
        if self.zcard(self.key(QueueKey::Pending))? > 0 {
            let turn = self.next_turn()?;
            self.zadd(self.key(QueueKey::Groups), &[(turn, UNGROUPED_LANE)])?;
        }
        Ok(true)
    }

    /// Ungrouped jobs entered pending on a queue with groups: the `{}`
    /// lane is ready (`ungrouped_entered`).
    pub(crate) fn ungrouped_entered(&self, groups_on: bool) -> Result<(), ValkeyError> {
        let groups = self.key(QueueKey::Groups);
        if groups_on && self.zscore(groups, &self.text(UNGROUPED_LANE))?.is_none() {
            let turn = self.next_turn()?;
            self.zadd(groups, &[(turn, UNGROUPED_LANE)])?;
        }
        Ok(())
    }

    /// Whether an ungrouped job is pending (a member of pending scored
    /// ≥ 0).
    pub(crate) fn ungrouped_pending(&self) -> Result<bool, ValkeyError> {
        Ok(!self
            .zrange(
                self.key(QueueKey::Pending),
                Bound::from(0.0),
                Bound::HIGHEST,
                1,
            )?
            .is_empty())
    }

    /// Ungrouped jobs left pending other than by a claim (`ungrouped_left`).
    pub(crate) fn ungrouped_left(&self, groups_on: bool) -> Result<(), ValkeyError> {
        if groups_on && !self.ungrouped_pending()? {
            self.zrem(self.key(QueueKey::Groups), &[UNGROUPED_LANE])?;
        }
        Ok(())
    }

    /// Job `id` enters pending at `score` (`enter_pending`).
    pub(crate) fn enter_pending(
        &self,
        groups_on: bool,
        id: &[u8],
        score: i64,
        group: Option<&[u8]>,
        now: u64,
    ) -> Result<(), ValkeyError> {
        let pending = self.key(QueueKey::Pending);
        let Some(group) = group else {
            self.zadd(pending, &[(score, id)])?;
            return self.ungrouped_entered(groups_on);
        };
        self.zadd(pending, &[(score - GROUPED_OFFSET as i64, id)])?;
        let lane = self.lane_key(group);
        let fresh = !self.exists(&lane);
        self.zadd(&lane, &[(score, id)])?;
        if fresh {
            self.zadd_new(self.key(QueueKey::GroupIndex), 0, group)?;
            let st = self.group_state(group)?;
            self.place(group, &st, now, true)?;
        }
        Ok(())
    }

    /// A lane that lost jobs other than by a claim: left empty, it leaves
    /// the ready and wait sets, and the index without a hash.
    fn lane_emptied(&self, group: &[u8]) -> Result<(), ValkeyError> {
        if !self.exists(&self.lane_key(group)) {
            self.zrem(self.key(QueueKey::Groups), &[group])?;
            self.zrem(self.key(QueueKey::GroupsWait), &[group])?;
            self.index_group(group)?;
        }
        Ok(())
    }

    /// Job `id` left pending (`pending` or `fifo`) other than by a claim
    /// (`leave_pending`).
    pub(crate) fn leave_pending(
        &self,
        groups_on: bool,
        id: &[u8],
        group: Option<&[u8]>,
    ) -> Result<(), ValkeyError> {
        self.remove_pending(id)?;
        let Some(group) = group else {
            return self.ungrouped_left(groups_on);
        };
        self.zrem(&self.lane_key(group), &[id])?;
        self.lane_emptied(group)
    }

    /// Jobs of `group` deleted from pending by DRAIN (`lane_deleted`).
    pub(crate) fn lane_deleted(&self, group: &[u8], ids: &[&[u8]]) -> Result<(), ValkeyError> {
        self.zrem(&self.lane_key(group), ids)?;
        self.lane_emptied(group)
    }

    /// A job of `group` left active (`leave_active`): under the group's
    /// cap, its `active` drops, and a group that was at its cap is put
    /// where it belongs; nothing is read unless a group of the queue ever
    /// had a cap or a limit (`group_flow`).
    pub(crate) fn leave_active(
        &self,
        group_flow: bool,
        group: &[u8],
        now: u64,
    ) -> Result<(), ValkeyError> {
        if !group_flow {
            return Ok(());
        }
        let mut st = self.group_state(group)?;
        if st.concurrency == 0 {
            return Ok(());
        }
        let capped = st.active >= st.concurrency;
        st.active = (st.active - 1).max(0);
        self.cache_group(group, st.clone());
        let key = self.group_key(group);
        if st.active == 0 {
            self.hdel(&key, &[b"active"])?;
        } else {
            self.hset(&key, &[b"active", st.active.to_string().as_bytes()])?;
        }
        if capped {
            let has_jobs = self.exists(&self.lane_key(group));
            self.place(group, &st, now, has_jobs)?;
        }
        Ok(())
    }

    /// Job `id` enters pending at the back of its priority band
    /// (`push_pending`): at the tail of `fifo` when [`by_fifo`], else with
    /// a fresh seq, and its group's lane; on a queue with the `lifo` mark
    /// (`lifo_on`), a job whose `lifo` is 1 at the front instead
    /// ([`Store::push_lifo`]).
    pub(crate) fn push_pending(
        &self,
        (groups_on, lifo_on): (bool, bool),
        id: &[u8],
        priority: i64,
        group: Option<&[u8]>,
        now: u64,
    ) -> Result<(), ValkeyError> {
        if lifo_on && self.is_lifo(id)? {
            return self.push_lifo(groups_on, id, priority, group, now);
        }
        if by_fifo(groups_on, priority, group) {
            return self.push_fifo(&[id]);
        }
        let seq = self.incr(self.key(QueueKey::Seq))?;
        self.enter_pending(
            groups_on,
            id,
            crate::server::store::score(priority, seq),
            group,
            now,
        )
    }

    /// Before a command's first write, on a queue with groups
    /// (`read_group`): the group keys' types checked (pending's, and the
    /// signal key's when the command may wake a worker), and the lane and
    /// state of the job's `group` read.
    pub(crate) fn read_group(
        &self,
        groups_on: bool,
        signal: bool,
        group: Option<&[u8]>,
    ) -> Result<(), ValkeyError> {
        if groups_on {
            self.expect_group_keys(true, signal)?;
        }
        if let Some(group) = group {
            self.read_lane(group)?;
        }
        Ok(())
    }
}

/// `(group, id)` pairs gathered by group, the groups in the order first
/// met (in one pass, however many groups).
pub(crate) fn by_group<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Vec<(K, Vec<V>)>
where
    K: Eq + std::hash::Hash + Clone,
{
    let mut at: FastMap<K, usize> = FastMap::default();
    let mut gathered: Vec<(K, Vec<V>)> = Vec::new();
    for (group, id) in pairs {
        match at.get(&group) {
            Some(&i) => gathered[i].1.push(id),
            None => {
                at.insert(group.clone(), gathered.len());
                gathered.push((group, vec![id]));
            }
        }
    }
    gathered
}
