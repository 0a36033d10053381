"""The pull-worker loop: claim up to the free slots, run the handler on each job in its own
thread while a heartbeat thread renews its lease, then complete or fail it with the lease
token (the server fences out a worker whose lease was lost).

A job in this worker goes through:

    claimed -> running -> completed            handler returned: complete(result)
                       -> failed               handler raised: fail(exception) (retried, then dead)
                       -> cancelled            a heartbeat answered cancelRequested (or the handler
                                               raised JobCancelledError): fail, and it ends cancelled
                       -> discarded            the lease was lost (409): nothing is sent

Cancellation cannot interrupt Python code: the handler sees it through its context
(`context.cancelled`, an Event, or `context.raise_if_cancelled()`) and should stop.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable, Optional, Set

from .client import SluiceClient
from .errors import JobCancelledError, LeaseLostError, SluiceError
from .models import JSON, ClaimedJob

log = logging.getLogger("sluice_client")


class JobContext:
    """What a handler gets: the job, and whether it should stop."""

    def __init__(self, job: ClaimedJob, client: Optional[SluiceClient] = None) -> None:
        self.job = job
        self._client = client
        self.cancelled = threading.Event()
        """Set once the job was cancelled or its lease lost: its result would be discarded."""
        self.lease_lost = False

    def progress(self, value: Any) -> None:
        """Reports the job's progress (any JSON value, at most 4 KiB)."""
        assert self._client is not None, "a context made by a Worker"
        self._client.progress(self.job.id, self.job.lease_token, value)

    def log(self, line: str) -> None:
        """Adds a line to the job's log."""
        assert self._client is not None, "a context made by a Worker"
        self._client.log(self.job.id, self.job.lease_token, line)

    def raise_if_cancelled(self) -> None:
        """Raises `JobCancelledError` once a heartbeat has answered that the job was cancelled:
        call it between steps; the worker then fails the job and it ends cancelled."""
        if self.cancelled.is_set():
            raise JobCancelledError("job %s was cancelled" % self.job.id)


Handler = Callable[[JobContext], JSON]


class Worker:
    """Runs `handler` on the jobs of `queue`, at most `concurrency` at a time."""

    def __init__(
        self,
        client: SluiceClient,
        queue: str,
        handler: Handler,
        *,
        concurrency: int = 5,
        lease_seconds: int = 60,
        heartbeat_seconds: Optional[float] = None,
        poll_seconds: float = 1.0,
        worker_id: Optional[str] = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if lease_seconds < 1:
            raise ValueError("lease_seconds must be at least 1")
        self.client = client
        self.queue = queue
        self.handler = handler
        self.concurrency = concurrency
        self.lease_seconds = lease_seconds
        # A third of the lease: two beats may fail before the lease runs out.
        self.heartbeat_seconds = heartbeat_seconds if heartbeat_seconds is not None else max(0.5, lease_seconds / 3.0)
        self.poll_seconds = poll_seconds
        self.worker_id = worker_id or "python:%s:%d" % (socket.gethostname(), os.getpid())
        self.stopping = threading.Event()

    def stop(self) -> None:
        """Claims no more jobs; `run` returns once the jobs in hand are finished."""
        self.stopping.set()

    def run(self, *, exit_when_idle: bool = False) -> None:
        """Claims and runs jobs until `stop()` (or, with `exit_when_idle`, until a claim comes back empty with nothing running)."""
        running: Set[Future[None]] = set()
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="sluice-job") as pool:
            while not self.stopping.is_set():
                running = {f for f in running if not f.done()}
                free = self.concurrency - len(running)
                try:
                    jobs = self.client.claim(self.queue, max_jobs=free, lease_seconds=self.lease_seconds, worker_id=self.worker_id) if free > 0 else []
                except SluiceError as error:
                    if error.status is not None and error.status < 500:
                        raise  # a refusal that retrying cannot mend: a missing queue, a bad token
                    # The server restarting or out of reach: keep the jobs in hand, try again.
                    log.warning("claim from %s failed: %s", self.queue, error)
                    jobs = []
                for job in jobs:
                    running.add(pool.submit(self.run_job, job))
                if jobs:
                    continue
                if exit_when_idle and not running:
                    return
                # Nothing to claim, or no free slot: wait for a job to finish, a stop, or the next poll.
                if running:
                    wait(running, timeout=self.poll_seconds, return_when=FIRST_COMPLETED)
                else:
                    self.stopping.wait(self.poll_seconds)

    def run_job(self, job: ClaimedJob) -> None:
        """One job, start to finish (see the states in this module's header)."""
        context = JobContext(job, self.client)
        beats_stop = threading.Event()
        beats = threading.Thread(target=self._beat, args=(context, beats_stop), name="sluice-heartbeat-%s" % job.id, daemon=True)
        beats.start()
        try:
            try:
                result = self.handler(context)
            except JobCancelledError as cancelled:
                self._finish(context, lambda: self.client.fail(job.id, job.lease_token, cancelled), "cancelled")
            except Exception as error:
                self._finish(context, lambda: self.client.fail(job.id, job.lease_token, error), "failed: %s" % error)
            else:
                if context.cancelled.is_set() and not context.lease_lost:
                    # Cancelled while running: its result is not wanted; failing ends it cancelled.
                    self._finish(context, lambda: self.client.fail(job.id, job.lease_token, JobCancelledError("job %s was cancelled" % job.id)), "cancelled")
                else:
                    self._finish(context, lambda: self.client.complete(job.id, job.lease_token, result), "completed")
        finally:
            beats_stop.set()
            beats.join()

    def _finish(self, context: JobContext, send: Callable[[], None], outcome: str) -> None:
        if context.lease_lost:
            log.warning("job %s: lease lost, result discarded", context.job.id)
            return
        try:
            send()
            log.info("job %s %s", context.job.id, outcome)
        except LeaseLostError as lost:
            log.warning("job %s: result discarded, %s", context.job.id, lost.message)

    def _beat(self, context: JobContext, stop: threading.Event) -> None:
        job = context.job
        while not stop.wait(self.heartbeat_seconds):
            try:
                beat = self.client.heartbeat(job.id, job.lease_token, lease_seconds=self.lease_seconds)
            except LeaseLostError:
                context.lease_lost = True
                context.cancelled.set()
                return
            except Exception as error:  # a transient failure: the next beat may succeed
                log.warning("heartbeat of job %s failed: %s", job.id, error)
                continue
            if beat.cancel_requested:
                context.cancelled.set()

