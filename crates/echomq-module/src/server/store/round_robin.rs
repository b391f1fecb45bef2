//! The round robin of a CLAIM on a queue with groups (`docs/protocol.md`,
//! "Groups"), the twin of `round_robin` and `settle_lanes` in
//! `scripts/claim.lua`: computed before the claim's first write, then
//! applied.

use crate::server::fast_hash::{FastMap, FastSet};
use crate::server::key::Bound;
use crate::server::store::Store;
use crate::server::store::flow::rate_window;
use crate::server::store::groups::{GroupState, Place, UNGROUPED_LANE, by_group};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::PROMOTE_PER_CLAIM;
use valkey_module::ValkeyError;

/// One lane as the round robin sees it.
struct Lane {
    /// How many more of its jobs this claim may take.
    room: u64,
    taken: u64,
    /// The index of its next head: past its picks and the heads passed
    /// over.
    at: u64,
    heads: Vec<Vec<u8>>,
    /// Whether every head it has was read.
    ended: bool,
    /// Whether the round robin reached it.
    reached: bool,
    /// The group's current window and its count, when it has a limit.
    window: Option<(i64, i64)>,
}

/// Whether a head, which it reads, is past its start_by (a claim on a
/// timed queue).
pub(crate) type PastStartBy<'a> = &'a mut dyn FnMut(&[u8]) -> Result<bool, ValkeyError>;

/// What a claim takes on a queue with groups, computed before any write.
pub(crate) struct Plan {
    /// The jobs, in the order taken: (lane, id).
    pub picks: Vec<(Vec<u8>, Vec<u8>)>,
    /// The heads passed over, past their start-by deadline: (lane, id).
    pub passed: Vec<(Vec<u8>, Vec<u8>)>,
    lanes: FastMap<Vec<u8>, Lane>,
    /// The lanes of the line in order (lanes are visited in this order).
    line: Vec<Vec<u8>>,
    /// The served lanes still in the line, in its final order.
    again: Vec<Vec<u8>>,
}

impl Store<'_> {
    /// The waiting groups whose window reopened by `now`, each one's state
    /// read (at most PROMOTE_PER_CLAIM); none unless a group of the queue
    /// ever had a cap or a limit (`reopened_groups`).
    pub(crate) fn reopened(&self, group_flow: bool, now: u64) -> Result<Vec<Vec<u8>>, ValkeyError> {
        if !group_flow {
            return Ok(Vec::new());
        }
        let waiting = self.key(QueueKey::GroupsWait);
        let reopened = self.zrange(
            waiting,
            Bound::LOWEST,
            Bound::upto(now as f64),
            PROMOTE_PER_CLAIM,
        )?;
        for group in &reopened {
            self.group_state(group)?;
        }
        Ok(reopened)
    }

    /// The round robin over the first `take` ready lanes, then the
    /// reopened groups that are ready now (`round_robin`). With `past` (on
    /// a timed queue: whether a head, which it reads, is past its start_by)
    /// a head past its deadline is passed over for the lane's next,
    /// counting in no room, at most PROMOTE_PER_CLAIM of them (the round
    /// robin stops at the next).
    pub(crate) fn round_robin(
        &self,
        group_flow: bool,
        (take, now): (u64, u64),
        reopened: &[Vec<u8>],
        mut past: Option<PastStartBy<'_>>,
    ) -> Result<Plan, ValkeyError> {
        let groups = self.key(QueueKey::Groups);
        let mut line = self.zrange(groups, Bound::LOWEST, Bound::HIGHEST, take)?;
        for group in reopened {
            let st = self.group_state(group)?;
            if st.place(now, self.exists(&self.lane_key(group))) == Place::Ready {
                line.push(group.clone());
            }
        }
        let mut lanes = FastMap::default();
        for lane in &line {
            let mut room = take;
            let mut window = None;
            // A group's cap and window matter only once a group ever had one.
            if lane != UNGROUPED_LANE && group_flow {
                let st = self.group_state(lane)?;
                if st.concurrency > 0 {
                    room = room.min((st.concurrency - st.active).max(0) as u64);
                }
                window = rate_window(&st.limit, now);
                if let Some((_, used)) = window {
                    room = room.min((st.limit.max - used).max(0) as u64);
                }
            }
            lanes.insert(
                lane.clone(),
                Lane {
                    room,
                    taken: 0,
                    at: 0,
                    heads: Vec::new(),
                    ended: false,
                    reached: false,
                    window,
                },
            );
        }
        let mut plan = Plan {
            picks: Vec::new(),
            passed: Vec::new(),
            lanes,
            line: line.clone(),
            again: Vec::new(),
        };
        let mut queue: std::collections::VecDeque<Vec<u8>> = line.into_iter().collect();
        while (plan.picks.len() as u64) < take {
            let Some(lane) = queue.pop_front() else {
                break;
            };
            let Lane {
                mut at,
                taken,
                room,
                ..
            } = plan.lanes[&lane];
            let mut head = self.head(&mut plan.lanes, &lane, at, take)?;
            let mut stop = false;
            if let Some(past) = past.as_mut() {
                while let Some(id) = head.as_deref().filter(|_| taken < room) {
                    if !past(id)? {
                        break;
                    }
                    if plan.passed.len() as u64 == PROMOTE_PER_CLAIM {
                        // As many passed over as a claim expires: no more picks.
                        stop = true;
                        break;
                    }
                    plan.passed.push((lane.clone(), id.to_vec()));
                    at += 1;
                    head = self.head(&mut plan.lanes, &lane, at, take)?;
                }
            }
            let entry = plan.lanes.get_mut(&lane).expect("a lane of the line");
            entry.reached = true;
            entry.at = at;
            if stop {
                break;
            }
            if let Some(id) = head
                && entry.taken < entry.room
            {
                entry.taken += 1;
                entry.at += 1;
                let (taken, room, at) = (entry.taken, entry.room, entry.at);
                plan.picks.push((lane.clone(), id));
                if taken < room && self.head(&mut plan.lanes, &lane, at, take)?.is_some() {
                    queue.push_back(lane);
                }
            }
        }
        plan.again = queue
            .into_iter()
            .filter(|lane| plan.lanes[lane].taken > 0)
            .collect();
        Ok(plan)
    }

    /// Head `i` (from 0) of a lane: two read at first, then twice as many
    /// as read so far, never more than the lane may give plus one.
    fn head(
        &self,
        lanes: &mut FastMap<Vec<u8>, Lane>,
        lane: &[u8],
        i: u64,
        take: u64,
    ) -> Result<Option<Vec<u8>>, ValkeyError> {
        let l = lanes.get_mut(lane).expect("a lane of the line");
        while l.heads.len() as u64 <= i && !l.ended {
            let from = l.heads.len() as u64;
            // Past the room + 1 (heads passed over), one at a time.
            let n = from
                .max(2)
                .min((l.room.min(take) + 1).saturating_sub(from))
                .max(1);
            // Read from the lane's start, as a ZRANGE with an offset would.
            let ids = if lane == UNGROUPED_LANE {
                let pending = self.key(QueueKey::Pending);
                self.zrange(pending, Bound::from(0.0), Bound::HIGHEST, from + n)?
            } else {
                let key = self.lane_key(lane);
                self.zrange(&key, Bound::LOWEST, Bound::HIGHEST, from + n)?
            };
            let fresh: Vec<Vec<u8>> = ids.into_iter().skip(from as usize).collect();
            l.ended = (fresh.len() as u64) < n;
            l.heads.extend(fresh);
        }
        Ok(l.heads.get(i as usize).cloned())
    }

    /// Takes the plan's jobs out of pending and their lanes, counts them in
    /// their groups, and puts the lanes it served where they now belong
    /// (`settle_lanes`).
    pub(crate) fn apply_round_robin(
        &self,
        group_flow: bool,
        plan: &Plan,
        now: u64,
    ) -> Result<(), ValkeyError> {
        let ids: Vec<&[u8]> = plan
            .picks
            .iter()
            .chain(&plan.passed)
            .map(|(_, id)| id.as_slice())
            .collect();
        self.zrem(self.key(QueueKey::Pending), &ids)?;
        // A head passed over leaves its lane, counted in no group.
        for (lane, members) in by_group(
            plan.passed
                .iter()
                .filter(|(lane, _)| lane.as_slice() != UNGROUPED_LANE)
                .map(|(lane, id)| (lane.as_slice(), id.as_slice())),
        ) {
            self.zrem(&self.lane_key(lane), &members)?;
        }
        // Each served group writes its own keys: the order of the groups
        // does not change the keyspace.
        let served = by_group(
            plan.picks
                .iter()
                .filter(|(lane, _)| lane.as_slice() != UNGROUPED_LANE)
                .map(|(lane, id)| (lane.as_slice(), id.as_slice())),
        );
        let mut states: FastMap<&[u8], GroupState> = FastMap::default();
        for (lane, members) in &served {
            self.zrem(&self.lane_key(lane), members)?;
            if !group_flow {
                continue;
            }
            // A group counts its active jobs under a cap only, and its
            // starts under a rate limit only.
            let mut st = self.group_state(lane)?;
            let taken = members.len() as i64;
            let mut fields: Vec<(&[u8], String)> = Vec::new();
            if st.concurrency > 0 {
                st.active += taken;
                fields.push((b"active", st.active.to_string()));
            }
            if let Some((window, used)) = plan.lanes[*lane].window {
                st.limit.window = window;
                st.limit.used = used + taken;
                fields.push((b"limit_window", window.to_string()));
                fields.push((b"limit_used", st.limit.used.to_string()));
            }
            if !fields.is_empty() {
                let pairs: Vec<&[u8]> = fields
                    .iter()
                    .flat_map(|(name, value)| [*name, value.as_bytes()])
                    .collect();
                self.hset(&self.group_key(lane), &pairs)?;
            }
            self.cache_group(lane, st.clone());
            states.insert(lane, st);
        }
        self.settle_lanes(group_flow, plan, &states, now)
    }

    /// The served lanes' new places, one write per set (`settle_lanes`).
    fn settle_lanes(
        &self,
        group_flow: bool,
        plan: &Plan,
        states: &FastMap<&[u8], GroupState>,
        now: u64,
    ) -> Result<(), ValkeyError> {
        let mut turn = self.next_turn()?;
        let mut ready: Vec<(i64, &[u8])> = Vec::new();
        let mut waiting: Vec<(i64, &[u8])> = Vec::new();
        let mut gone: Vec<&[u8]> = Vec::new();
        let mut back: FastSet<&[u8]> = FastSet::default();
        for lane in &plan.again {
            ready.push((turn, lane));
            turn += 1;
            back.insert(lane);
        }
        // Then the other lanes it reached, in the line's order.
        for lane in &plan.line {
            if !plan.lanes[lane].reached || back.contains(lane.as_slice()) {
                continue;
            }
            let place = if lane == UNGROUPED_LANE {
                if self.ungrouped_pending()? {
                    Place::Ready
                } else {
                    Place::Nowhere
                }
            } else {
                let has_jobs = self.exists(&self.lane_key(lane));
                if !has_jobs {
                    // A group whose last pending job the claim took may
                    // have no key left.
                    self.index_group(lane)?;
                }
                // A lane without a state read is one with neither cap nor
                // limit (and not paused: a paused group is in no line).
                let st = match states.get(lane.as_slice()) {
                    Some(st) => st.clone(),
                    None if group_flow => self.group_state(lane)?,
                    None => GroupState::default(),
                };
                st.place(now, has_jobs)
            };
            match place {
                Place::Ready => {
                    ready.push((turn, lane));
                    turn += 1;
                }
                Place::Wait(reopen) => {
                    gone.push(lane);
                    waiting.push((reopen, lane));
                }
                Place::Nowhere => gone.push(lane),
            }
        }
        self.zrem(self.key(QueueKey::Groups), &gone)?;
        self.zadd(self.key(QueueKey::Groups), &ready)?;
        self.zadd(self.key(QueueKey::GroupsWait), &waiting)?;
        Ok(())
    }
}
