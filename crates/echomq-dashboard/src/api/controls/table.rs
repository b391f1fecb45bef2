//! Where the API serves each control of the registry ([`served`]): one
//! `match` over every [`Transition`], with no catch-all, so a new row of
//! the registry does not compile until it is placed here; the test
//! `every_control_an_operator_or_producer_sends_has_an_endpoint` holds
//! each place to the router and the OpenAPI document.

use echomq::Transition;
use echomq::protocol::control::Command;

/// Where a control is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Served {
    /// `POST /queues/{q}/controls/{verb}`.
    Queue,
    /// `POST /queues/{q}/jobs/{id}/controls/{verb}`: the row's `id`
    /// argument is the path's.
    Job,
    /// A worker's own call (its claim, or a call on the job it holds,
    /// fenced by its token), at this path of the API.
    Worker(&'static str),
    /// The producers' enqueue (a run-at or a delay schedules), at this
    /// path of the API.
    Produce(&'static str),
    /// A read the reading endpoints serve, at this path of the API.
    Read(&'static str),
    /// Sent by no caller of the API: the library sends it by itself,
    /// inside another call (why).
    Inside(&'static str),
    /// An operator's endpoint of its own at this path of the API, taking
    /// what the library's call takes rather than the row's arguments.
    Operate(&'static str),
}

/// Where `t` is served.
pub(crate) fn served(t: Transition) -> Served {
    use Served::*;
    use Transition as T;
    match t {
        T::Enqueue | T::Schedule => Produce("/queues/{q}/jobs"),
        T::Claim => Worker("/queues/{q}/claim"),
        T::Complete => Worker("/queues/{q}/jobs/{id}/complete"),
        T::Fail => Worker("/queues/{q}/jobs/{id}/fail"),
        T::Extend => Worker("/queues/{q}/jobs/{id}/extend"),
        T::Progress => Worker("/queues/{q}/jobs/{id}/progress"),
        T::Log => Worker("/queues/{q}/jobs/{id}/log"),
        T::Delay => Worker("/queues/{q}/jobs/{id}/delay"),
        T::Get => Read("/queues/{q}/jobs/{id}"),
        T::Outcome => Read("/queues/{q}/jobs/{id}/outcome"),
        T::Promote
        | T::StalledCheck
        | T::Pause
        | T::Resume
        | T::Drain
        | T::Obliterate
        | T::Counts
        | T::Retention
        | T::DedupOwner
        | T::DedupRelease
        | T::Limit
        | T::Concurrency
        | T::GroupConcurrency
        | T::GroupLimit
        | T::GroupPause
        | T::GroupResume
        | T::GroupCounts
        | T::Groups
        | T::FlowCheckup
        | T::FlowOutbox => Queue,
        T::Reschedule
        | T::Cancel
        | T::Update
        | T::Remove
        | T::Reprocess
        | T::Requeue
        | T::FlowDeps
        | T::FlowDependents => Job,
        T::FlowWait => Inside(
            "a Rust handler's spawn-and-wait (JobContext::spawn_and_wait) sends it after FLOW.ADD",
        ),
        T::FlowResolve | T::FlowAck | T::FlowSettle => Inside(
            "the relay (the outbox control, Queue::relay) sends them for each resolution it delivers",
        ),
        T::FlowLink => {
            Inside("a flow's submission and the check-up (the flow-checkup control) send it")
        }
        // The flow document of `emq flow add`, submitted whole.
        T::FlowAdd => Produce("/flows"),
        // A cadence (Repeat::every, Repeat::cron), not the row's stored
        // definition.
        T::RepeatAdd => Operate("/queues/{q}/repeats"),
    }
}

/// The endpoint's last segment: the verb in lower case, `.` as `-`
/// (`GROUP.PAUSE` → `group-pause`).
pub(crate) fn verb(t: Transition) -> String {
    t.control().verb.to_ascii_lowercase().replace('.', "-")
}

/// The controls served at `place`, in the registry's order.
pub(crate) fn at(place: Served) -> impl Iterator<Item = Transition> {
    Transition::ALL
        .iter()
        .copied()
        .filter(move |t| served(*t) == place)
}

/// The options of `t`'s row the library sets itself and a body does not
/// give, with why; every other argument and option is a body field.
pub(crate) fn library_owned(t: Transition) -> &'static [(&'static str, &'static str)] {
    const CHUNK: &str = "the library deletes in chunks of DELETE_CHUNK until none is left";
    match t {
        Transition::Drain => &[("COUNT", CHUNK)],
        Transition::Obliterate => &[("COUNT", CHUNK)],
        Transition::Groups => &[],
        Transition::FlowDeps | Transition::FlowDependents => &[
            ("CURSOR", "the library reads every page"),
            ("COUNT", "the library reads every page"),
        ],
        Transition::FlowCheckup => &[
            ("COUNT", "the library checks up in passes until none is due"),
            ("AGAIN", "the library's check-up interval"),
        ],
        Transition::FlowOutbox => &[
            (
                "COUNT",
                "the relay reads the outbox in pages until it is empty",
            ),
            (
                "JOBS",
                "the relay reads the outbox in pages until it is empty",
            ),
        ],
        _ => &[],
    }
}

/// The row's single form.
pub(crate) fn command(t: Transition) -> &'static Command {
    &t.control().command
}
