"""The typed answers of the API (docs/http.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

OutcomeKind = Literal["completed", "dead", "cancelled", "removed"]
"""How a job ended."""

FailAction = Literal["retry", "dead", "cancelled", "rate_limited"]
"""What a worker's failure asks for."""


class JobOptions(TypedDict, total=False):
    """A new job's options, as the server's job object names them."""

    id: str
    priority: int
    attempts: int
    delay_ms: int
    run_at: int
    dedup: str
    dedup_for_ms: int
    debounce_ms: int
    group: str
    time_limit_ms: int
    start_by: int
    start_within_ms: int
    lifo: bool
    traceparent: str


class NewJob(JobOptions, total=False):
    """One job of :meth:`Client.enqueue_many`: ``payload`` and its options."""

    payload: Any


@dataclass(frozen=True)
class Enqueued:
    """An enqueue's answer: the job's id and what happened.

    ``outcome`` is ``created``, or ``existed``, ``deduplicated`` or
    ``debounced`` (the id is then the holder's).
    """

    id: str
    outcome: str

    @staticmethod
    def parse(value: dict[str, Any]) -> Enqueued:
        return Enqueued(id=str(value["id"]), outcome=str(value["outcome"]))


@dataclass(frozen=True)
class Outcome:
    """How a job ended: ``result`` when completed, ``error`` and
    ``attempts`` when dead."""

    id: str
    outcome: OutcomeKind
    result: Any = None
    error: str | None = None
    attempts: int | None = None

    @property
    def completed(self) -> bool:
        """Whether the job completed."""
        return self.outcome == "completed"

    @staticmethod
    def parse(value: dict[str, Any]) -> Outcome:
        kind = value["outcome"]
        if kind not in ("completed", "dead", "cancelled", "removed"):
            raise ValueError(f"not an outcome: {kind!r}")
        attempts = value.get("attempts")
        error = value.get("error")
        return Outcome(
            id=str(value["id"]),
            outcome=kind,
            result=value.get("result"),
            error=None if error is None else str(error),
            attempts=None if attempts is None else int(attempts),
        )


@dataclass(frozen=True)
class QueueInfo:
    """A queue: its counts per state, whether it is paused, its settings,
    how long its oldest pending job has waited; or, for a queue the
    server could not read, ``unreadable`` saying why."""

    name: str
    counts: dict[str, int]
    paused: bool
    settings: dict[str, Any] = field(default_factory=dict)
    oldest_pending_ms: int | None = None
    unreadable: str | None = None

    @staticmethod
    def parse(value: dict[str, Any]) -> QueueInfo:
        return QueueInfo(
            name=str(value["name"]),
            counts={str(k): int(v) for k, v in dict(value.get("counts") or {}).items()},
            paused=bool(value.get("paused", False)),
            settings=dict(value.get("settings") or {}),
            oldest_pending_ms=None if value.get("oldest_pending_ms") is None else int(value["oldest_pending_ms"]),
            unreadable=None if value.get("unreadable") is None else str(value["unreadable"]),
        )


@dataclass(frozen=True)
class JobPage:
    """A page of jobs (each the library's ``JobRecord`` as a dict) and the
    cursor of the next page, ``None`` at the end."""

    jobs: list[dict[str, Any]]
    next: str | None


@dataclass(frozen=True)
class Claimed:
    """A job a claim handed out, with the fencing token its calls need."""

    id: str
    token: int
    payload: Any
    attempt: int
    max_attempts: int
    lease_ms: int
    time_limit_ms: int | None = None
    traceparent: str | None = None
    dependencies: Any = None
    payload_raw: bool = False
    """Whether the payload was not JSON (written by another client): it is
    then a string, its non-UTF-8 bytes written ``\\xNN``."""

    @staticmethod
    def parse(value: dict[str, Any]) -> Claimed:
        time_limit = value.get("time_limit_ms")
        traceparent = value.get("traceparent")
        return Claimed(
            id=str(value["id"]),
            token=int(value["token"]),
            payload=value.get("payload"),
            attempt=int(value.get("attempt", 1)),
            max_attempts=int(value.get("max_attempts", 1)),
            lease_ms=int(value.get("lease_ms", 0)),
            time_limit_ms=None if time_limit is None else int(time_limit),
            traceparent=None if traceparent is None else str(traceparent),
            dependencies=value.get("dependencies"),
            payload_raw=bool(value.get("payload_raw", False)),
        )


@dataclass(frozen=True)
class Event:
    """One of a queue's lifecycle events: its id (to resume after), its
    name (``completed``, ``retried``, ...) and its fields (``job`` among
    them)."""

    id: str
    name: str
    data: dict[str, Any]
