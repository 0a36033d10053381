"""The HTTP client: producers send and wait, workers claim, heartbeat and finish with
their lease token. Standard library only (urllib, json); one instance may be shared by
threads, as every call opens its own request."""
from __future__ import annotations

import json
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from typing import Any, Dict, List, Optional, Union

from .errors import AdmissionRefusedError, LeaseLostError, SluiceError, WaitTimeoutError
from .models import JSON, ClaimedJob, Heartbeat, Job, SendResult, _time

_REFUSALS = frozenset({"queue_full", "admission_unavailable", "key_limit"})


class SluiceClient:
    """A Sluice server at `url`, called with the API token (`SLUICE_API_TOKEN` of the server)."""

    def __init__(self, url: str, token: str, *, timeout_seconds: float = 30.0) -> None:
        if not token:
            raise ValueError("a token is required (the server's SLUICE_API_TOKEN or admin token)")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_seconds = timeout_seconds

    # -- producers -------------------------------------------------------------------

    def send(
        self,
        queue: str,
        data: JSON = None,
        *,
        key: Optional[str] = None,
        singleton_key: Optional[str] = None,
        run_at: Optional[datetime] = None,
        delay_ms: Optional[int] = None,
        priority: Optional[int] = None,
        max_attempts: Optional[int] = None,
        cost: Optional[int] = None,
        timeout_ms: Optional[int] = None,
        singleton_period_ms: Optional[int] = None,
        debounce_key: Optional[str] = None,
        debounce_delay_ms: Optional[int] = None,
        debounce_max_delay_ms: Optional[int] = None,
        depends_on: Optional[List[str]] = None,
        on_parent_failure: Optional[str] = None,
        trace_context: Optional[Dict[str, str]] = None,
    ) -> SendResult:
        """Enqueues one job. A refusal (the queue full, the key at its limit) raises
        `AdmissionRefusedError` with the server's `retry_after_seconds`.

        `singleton_period_ms`: with `singleton_key`, the job holds the key this long, even once
        completed. `debounce_key` and `debounce_delay_ms` (and `debounce_max_delay_ms`): sends with
        the key collapse into one job, run that long after the last with its data. `depends_on`:
        ids of parent jobs it waits for (`on_parent_failure`: "cancel" or "run"). `trace_context`:
        headers of the caller's trace (`traceparent`, `tracestate`), which the job's trace continues."""
        body = {"data": data, **_send_options(
            key=key, singleton_key=singleton_key, run_at=run_at, delay_ms=delay_ms, priority=priority,
            max_attempts=max_attempts, cost=cost, timeout_ms=timeout_ms, singleton_period_ms=singleton_period_ms,
            debounce_key=debounce_key, debounce_delay_ms=debounce_delay_ms, debounce_max_delay_ms=debounce_max_delay_ms,
            depends_on=depends_on, on_parent_failure=on_parent_failure,
        )}
        answer = self._request("POST", "/api/queues/%s/jobs" % _segment(queue), body, headers=trace_context)
        return SendResult(id=str(answer["id"]), deduplicated=bool(answer.get("deduplicated", False)))

    def send_flow(self, jobs: List[Dict[str, Any]]) -> Dict[str, SendResult]:
        """Sends jobs and the dependencies between them in one transaction. Each job is a dict
        with `ref`, `queue`, `data` and the keyword arguments of `send` (`depends_on`: refs of
        the flow's jobs, or ids of jobs that exist as {"jobId": id}). Answers each ref's result;
        a cycle or an unknown ref raises `SluiceError` ("flow_invalid") and writes nothing."""
        wire = []
        for job in jobs:
            options = {name: value for name, value in job.items() if name not in ("ref", "queue", "data")}
            wire.append({"ref": job["ref"], "queue": job["queue"], "data": job.get("data"), **_send_options(**options)})
        answer = self._request("POST", "/api/flows", {"jobs": wire})
        return {ref: SendResult(id=str(r["id"]), deduplicated=bool(r.get("deduplicated", False))) for ref, r in answer["jobs"].items()}

    def logs(self, job_id: str, *, after_seq: int = 0, limit: int = 1000) -> Dict[str, Any]:
        """A job's log lines numbered after `after_seq`, oldest first: {"lines": [{"seq", "attempt",
        "at", "line"}], "total", "dropped"} (a job keeps its newest 1000)."""
        return self._request("GET", "/api/jobs/%s/logs?afterSeq=%d&limit=%d" % (_segment(job_id), after_seq, limit))

    def get(self, job_id: str) -> Job:
        """The job as it is now: state, payload, result, attempts and errors. `SluiceError`
        ("job_not_found") when there is none."""
        return Job.from_json(self._request("GET", "/api/jobs/%s" % _segment(job_id)))

    def wait_for(self, job_id: str, *, timeout_seconds: float, poll_ms: int = 20_000) -> Job:
        """The job once it is final (completed, dead or cancelled). Long-polls the server
        (`GET /api/jobs/:id?waitMs=`, which answers as soon as the job is final) until then,
        or raises `WaitTimeoutError` after `timeout_seconds` with the job's last state."""
        deadline = time.monotonic() + timeout_seconds
        while True:
            remaining_ms = int((deadline - time.monotonic()) * 1000)
            wait_ms = max(0, min(poll_ms, remaining_ms))
            path = "/api/jobs/%s?waitMs=%d" % (_segment(job_id), wait_ms)
            # The request itself may take the whole wait: allow for it beyond the usual timeout.
            job = Job.from_json(self._request("GET", path, timeout_seconds=self.timeout_seconds + wait_ms / 1000.0))
            if job.is_final:
                return job
            if time.monotonic() >= deadline:
                raise WaitTimeoutError(job_id, timeout_seconds, job)

    # -- workers ---------------------------------------------------------------------

    def claim(self, queue: str, *, max_jobs: int = 1, lease_seconds: Optional[int] = None, worker_id: Optional[str] = None) -> List[ClaimedJob]:
        """Up to `max_jobs` jobs, each leased to this caller for `lease_seconds` (the queue's lease by default)."""
        body: Dict[str, Any] = {"max": max_jobs}
        if lease_seconds is not None:
            body["leaseSeconds"] = lease_seconds
        if worker_id is not None:
            body["workerId"] = worker_id
        answer = self._request("POST", "/api/queues/%s/claim" % _segment(queue), body)
        return [ClaimedJob.from_json(job) for job in answer["jobs"]]

    def heartbeat(self, job_id: str, lease_token: str, *, lease_seconds: Optional[int] = None) -> Heartbeat:
        """Extends the lease. `cancel_requested` says the job was cancelled: stop, and fail it."""
        body: Dict[str, Any] = {"leaseToken": lease_token}
        if lease_seconds is not None:
            body["leaseSeconds"] = lease_seconds
        answer = self._request("POST", "/api/jobs/%s/heartbeat" % _segment(job_id), body)
        return Heartbeat(lease_expires_at=_time(answer.get("leaseExpiresAt")), cancel_requested=bool(answer.get("cancelRequested", False)))

    def progress(self, job_id: str, lease_token: str, value: JSON) -> None:
        """Reports a held job's progress (any JSON value, at most 4 KiB), kept as its last."""
        self._request("POST", "/api/jobs/%s/progress" % _segment(job_id), {"leaseToken": lease_token, "progress": value})

    def log(self, job_id: str, lease_token: str, lines: Union[str, List[str]]) -> int:
        """Adds 1 to 100 lines (each cut at 2000 characters) to a held job's log; the number of the last."""
        body = {"leaseToken": lease_token, "lines": [lines] if isinstance(lines, str) else list(lines)}
        return int(self._request("POST", "/api/jobs/%s/log" % _segment(job_id), body)["seq"])

    def complete(self, job_id: str, lease_token: str, result: JSON = None, *, cost: Optional[int] = None) -> None:
        """Completes a held job; raises `LeaseLostError` if the lease is no longer this caller's."""
        body: Dict[str, Any] = {"leaseToken": lease_token, "result": result}
        if cost is not None:
            body["cost"] = cost
        self._request("POST", "/api/jobs/%s/complete" % _segment(job_id), body)

    def fail(self, job_id: str, lease_token: str, error: Union[BaseException, str]) -> None:
        """Fails the attempt (retried with backoff, then dead); an exception is sent with its traceback."""
        if isinstance(error, BaseException):
            described = {
                "message": str(error) or type(error).__name__,
                "name": type(error).__name__,
                "stack": "".join(traceback.format_exception(type(error), error, error.__traceback__)),
            }
        else:
            described = {"message": error or "failed"}
        self._request("POST", "/api/jobs/%s/fail" % _segment(job_id), {"leaseToken": lease_token, "error": described})

    # -- transport -------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        body: Optional[Dict[str, Any]] = None,
        *,
        timeout_seconds: Optional[float] = None,
        headers: Optional[Dict[str, str]] = None,
    ) -> Any:
        headers = {**(headers or {}), "Authorization": "Bearer " + self.token, "Accept": "application/json"}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.url + path, data=payload, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout_seconds or self.timeout_seconds) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as answer:
            raise _error_of(answer) from None
        except (urllib.error.URLError, OSError) as error:
            raise SluiceError("unreachable", "%s %s: %s" % (method, self.url + path, error)) from error


def _send_options(
    *,
    key: Optional[str] = None,
    singleton_key: Optional[str] = None,
    run_at: Optional[datetime] = None,
    delay_ms: Optional[int] = None,
    priority: Optional[int] = None,
    max_attempts: Optional[int] = None,
    cost: Optional[int] = None,
    timeout_ms: Optional[int] = None,
    singleton_period_ms: Optional[int] = None,
    debounce_key: Optional[str] = None,
    debounce_delay_ms: Optional[int] = None,
    debounce_max_delay_ms: Optional[int] = None,
    depends_on: Optional[List[Any]] = None,
    on_parent_failure: Optional[str] = None,
) -> Dict[str, Any]:
    """A send's options as the server names them, those given only."""
    debounce = None
    if debounce_key is not None or debounce_delay_ms is not None:
        debounce = {"key": debounce_key, "delayMs": debounce_delay_ms}
        if debounce_max_delay_ms is not None:
            debounce["maxDelayMs"] = debounce_max_delay_ms
    options: Dict[str, Any] = {
        "key": key,
        "singletonKey": singleton_key,
        "runAt": run_at.isoformat() if run_at is not None else None,
        "delayMs": delay_ms,
        "priority": priority,
        "maxAttempts": max_attempts,
        "cost": cost,
        "timeoutMs": timeout_ms,
        "singletonPeriodMs": singleton_period_ms,
        "debounce": debounce,
        "dependsOn": depends_on,
        "onParentFailure": on_parent_failure,
    }
    return {name: value for name, value in options.items() if value is not None}


def _segment(value: str) -> str:
    return urllib.parse.quote(str(value), safe="")


def _error_of(answer: urllib.error.HTTPError) -> SluiceError:
    text = answer.read().decode("utf-8", errors="replace")
    try:
        body = json.loads(text)
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    code = str(body.get("error") or "http_%d" % answer.code)
    message = str(body.get("message") or text or answer.reason)
    retry_after: Optional[float] = None
    header = answer.headers.get("Retry-After") if answer.headers else None
    if header is not None:
        try:
            retry_after = float(header)
        except ValueError:
            retry_after = None
    cls = LeaseLostError if code == "lease_lost" else AdmissionRefusedError if code in _REFUSALS else SluiceError
    return cls(code, message, status=answer.code, retry_after_seconds=retry_after)
