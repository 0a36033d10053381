"""Errors the client raises. Every error answer of the server is `{error: <stable code>, message}`:
`SluiceError.code` carries that code, so callers branch on it rather than on messages."""
from __future__ import annotations

from typing import Optional


class SluiceError(Exception):
    """A request the server refused (or that never reached it: `code` is then `unreachable`)."""

    def __init__(self, code: str, message: str, *, status: Optional[int] = None, retry_after_seconds: Optional[float] = None) -> None:
        super().__init__("%s: %s" % (code, message))
        self.code = code
        self.message = message
        self.status = status
        self.retry_after_seconds = retry_after_seconds


class AdmissionRefusedError(SluiceError):
    """A send turned away (503 `queue_full` / `admission_unavailable`, 429 `key_limit`); retry after `retry_after_seconds`."""


class LeaseLostError(SluiceError):
    """409 `lease_lost`: the job was swept, cancelled or finished; this worker's result is fenced out."""


class WaitTimeoutError(Exception):
    """`wait_for` gave up: the job was not final within the caller's timeout. `job` is its last state."""

    def __init__(self, job_id: str, timeout_seconds: float, job: object) -> None:
        super().__init__("job %s not final after %g s" % (job_id, timeout_seconds))
        self.job_id = job_id
        self.timeout_seconds = timeout_seconds
        self.job = job


class JobCancelledError(Exception):
    """Raised inside a handler by `JobContext.raise_if_cancelled()` once the job's cancellation is seen."""
