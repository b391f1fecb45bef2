"""The errors the client raises, and the ones a worker's handler raises."""

from __future__ import annotations

import json
from typing import Any


class EchoMQError(Exception):
    """A request the server refused, in the API's one error shape.

    ``code`` is the protocol's refusal code (``BADSTATE``, ``NOTACTIVE``, ...)
    or the HTTP layer's own (``BADREQUEST``, ``UNAUTHORIZED``, ...);
    ``status`` the HTTP status (0 when the server could not be reached,
    with the code ``UNREACHABLE``); ``field``, ``job`` and ``state`` are set
    when the server named them, ``line`` (the protocol's error line,
    ``BADSTATE completed``) for a refused transition.
    """

    def __init__(
        self,
        code: str,
        message: str,
        status: int,
        field: str | None = None,
        job: str | None = None,
        state: str | None = None,
        line: str | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.message = message
        self.status = status
        self.field = field
        self.job = job
        self.state = state
        self.line = line

    @classmethod
    def from_response(cls, status: int, body: bytes) -> EchoMQError:
        """The error an answer with a non-2xx status carries."""
        try:
            error: Any = _json_object(body).get("error")
        except ValueError:
            error = None
        if not isinstance(error, dict):
            text = body.decode("utf-8", "replace").strip()
            return cls(f"HTTP{status}", text or f"HTTP status {status}", status)
        return cls(
            code=str(error.get("code", f"HTTP{status}")),
            message=str(error.get("message", "")),
            status=status,
            field=_optional_str(error.get("field")),
            job=_optional_str(error.get("job")),
            state=_optional_str(error.get("state")),
            line=_optional_str(error.get("line")),
        )


class Timeout(TimeoutError):
    """The outcome wait ran out (the server answered 202): the job runs on."""

    def __init__(self, id: str) -> None:
        super().__init__(f"job {id} has no outcome yet")
        self.id = id


class Permanent(Exception):
    """Raised by a handler: retrying will not help, the job is dead now."""


class Cancelled(Exception):
    """Raised by a handler that stopped because its job was cancelled."""


class Delay(Exception):
    """Raised by a handler whose job should run again later: it waits
    ``delay_ms``, without counting a failure or an attempt."""

    def __init__(self, delay_ms: int) -> None:
        super().__init__(f"delayed by {delay_ms} ms")
        self.delay_ms = delay_ms


class RateLimited(Exception):
    """Raised by a handler that met a rate limit: the job goes back to
    pending without counting an attempt, and the whole queue is held for
    ``retry_after_ms``."""

    def __init__(self, retry_after_ms: int, message: str = "rate limited") -> None:
        super().__init__(message)
        self.retry_after_ms = retry_after_ms


def _json_object(body: bytes) -> dict[str, Any]:
    value = json.loads(body)
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)
