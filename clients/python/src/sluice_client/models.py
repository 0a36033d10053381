"""What the server answers, as typed values. `raw` keeps the whole answer, so fields the
server adds later are never lost to a client that predates them."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, List, Optional

JSON = Any
"""Any JSON value: what a payload or a result may be."""

FINAL_STATES = frozenset({"completed", "dead", "cancelled"})


def _time(value: Any) -> Optional[datetime]:
    if not isinstance(value, str):
        return None
    # fromisoformat before 3.11 does not read a trailing Z.
    return datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)


@dataclass(frozen=True)
class SendResult:
    id: str
    deduplicated: bool = False


@dataclass(frozen=True)
class Job:
    id: str
    queue: str
    state: str
    data: JSON
    result: JSON
    attempts: int
    max_attempts: int
    key: Optional[str]
    errors: List[Dict[str, Any]]
    created_at: Optional[datetime]
    finished_at: Optional[datetime]
    lease_expires_at: Optional[datetime]
    worker_id: Optional[str]
    raw: Dict[str, Any] = field(repr=False, compare=False)
    trace_context: Optional[Dict[str, str]] = None
    """The trace context of the job's send (W3C: `traceparent`, `tracestate`), or None when
    the sender traced nothing: a carrier for OpenTelemetry's `propagate.extract`."""

    @property
    def is_final(self) -> bool:
        """Completed, dead or cancelled: nothing will change it but a replay."""
        return self.state in FINAL_STATES

    @property
    def traceparent(self) -> Optional[str]:
        """The W3C `traceparent` of the job's send span, the parent of a span for its work."""
        return (self.trace_context or {}).get("traceparent")

    @classmethod
    def from_json(cls, body: Dict[str, Any]) -> "Job":
        return cls(
            id=str(body["id"]),
            queue=body.get("queue", ""),
            state=body["state"],
            data=body.get("data"),
            result=body.get("result"),
            attempts=int(body.get("attempts") or 0),
            max_attempts=int(body.get("maxAttempts") or 0),
            key=body.get("key"),
            errors=list(body.get("errors") or []),
            created_at=_time(body.get("createdAt")),
            finished_at=_time(body.get("finishedAt")),
            lease_expires_at=_time(body.get("leaseExpiresAt")),
            worker_id=body.get("workerId"),
            raw=body,
            trace_context=body.get("traceContext"),
        )


@dataclass(frozen=True)
class ClaimedJob(Job):
    """A job this worker holds: `lease_token` must accompany its heartbeats, completion or failure."""

    lease_token: str = ""
    parents: Optional[List[Dict[str, Any]]] = None
    """A job sent with parents: each `{ id, queue, state, result }`, in the order of their ids."""

    @classmethod
    def from_json(cls, body: Dict[str, Any]) -> "ClaimedJob":
        job = Job.from_json(body)
        return cls(**{**job.__dict__, "lease_token": body["leaseToken"], "parents": body.get("parents")})


@dataclass(frozen=True)
class Heartbeat:
    lease_expires_at: Optional[datetime]
    cancel_requested: bool
