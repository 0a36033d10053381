"""The client against a real server: send, the worker loop, fencing, cancellation,
admission refusals, waiting for a result. Waits are on conditions with generous limits."""
from __future__ import annotations

import socket
import threading
import time
import uuid
from typing import Any, Callable, List

import pytest

from sluice_client import (
    AdmissionRefusedError,
    JobContext,
    LeaseLostError,
    SluiceClient,
    SluiceError,
    WaitTimeoutError,
    Worker,
)


def eventually(check: Callable[[], bool], what: str, limit_seconds: float = 60.0) -> None:
    deadline = time.monotonic() + limit_seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("not within %g s: %s" % (limit_seconds, what))
        time.sleep(0.05)


def test_send_then_a_worker_completes_every_job_once(client: SluiceClient, queue: str) -> None:
    ids = [client.send(queue, {"n": n}).id for n in range(6)]
    seen: List[Any] = []

    def double(context: JobContext) -> Any:
        seen.append(context.job.data["n"])
        return {"doubled": context.job.data["n"] * 2}

    Worker(client, queue, double, concurrency=3, lease_seconds=30, poll_seconds=0.1).run(exit_when_idle=True)
    assert sorted(seen) == list(range(6))
    for n, job_id in enumerate(ids):
        job = client.get(job_id)
        assert job.state == "completed" and job.is_final
        assert job.result == {"doubled": n * 2}
        assert job.worker_id is not None and job.worker_id.startswith("python:")
        assert job.finished_at is not None


def test_a_singleton_send_returns_the_job_already_there(client: SluiceClient, queue: str) -> None:
    first = client.send(queue, {"a": 1}, singleton_key="once")
    second = client.send(queue, {"a": 2}, singleton_key="once")
    assert not first.deduplicated
    assert second.deduplicated and second.id == first.id


def test_a_raising_handler_fails_the_job_with_its_traceback(client: SluiceClient, queue: str) -> None:
    job_id = client.send(queue, {"fail": True}).id

    def fail(context: JobContext) -> Any:
        raise ValueError("asked to fail")

    Worker(client, queue, fail, poll_seconds=0.1).run(exit_when_idle=True)
    job = client.get(job_id)
    assert job.state == "dead"
    assert job.errors[0]["name"] == "ValueError"
    assert "asked to fail" in job.errors[0]["message"]
    assert "Traceback (most recent call last)" in job.errors[0]["stack"]


def test_completion_is_fenced_by_the_lease_token(client: SluiceClient, queue: str) -> None:
    job_id = client.send(queue, "fenced").id
    [job] = client.claim(queue, max_jobs=1, lease_seconds=30, worker_id="python:test")
    assert job.id == job_id and job.state == "active" and job.lease_token
    with pytest.raises(LeaseLostError) as wrong:
        client.complete(job.id, str(uuid.uuid4()), "not mine")
    assert wrong.value.code == "lease_lost" and wrong.value.status == 409
    beat = client.heartbeat(job.id, job.lease_token, lease_seconds=30)
    assert beat.cancel_requested is False and beat.lease_expires_at is not None
    client.complete(job.id, job.lease_token, "mine")
    with pytest.raises(LeaseLostError):
        client.complete(job.id, job.lease_token, "again")
    assert client.get(job_id).result == "mine"


def test_a_cancelled_job_stops_its_handler_and_ends_cancelled(client: SluiceClient, admin: Any, queue: str) -> None:
    job_id = client.send(queue, "long").id
    started = threading.Event()
    saw_cancel: List[bool] = []

    def long_running(context: JobContext) -> Any:
        started.set()
        # Generous: the heartbeat (every 0.2 s here) brings the cancellation well before.
        saw_cancel.append(context.cancelled.wait(60))
        context.raise_if_cancelled()
        return "should not complete"

    worker = Worker(client, queue, long_running, lease_seconds=30, heartbeat_seconds=0.2, poll_seconds=0.1)
    thread = threading.Thread(target=worker.run, kwargs={"exit_when_idle": True})
    thread.start()
    try:
        assert started.wait(60), "the handler never started"
        admin.cancel(job_id)
        thread.join(90)
        assert not thread.is_alive(), "the worker did not finish the cancelled job"
    finally:
        worker.stop()
        thread.join(90)
    assert saw_cancel == [True]
    job = client.get(job_id)
    assert job.state == "cancelled"
    assert job.result is None


def test_a_full_queue_refuses_with_a_retry_after(client: SluiceClient, admin: Any, queue: str) -> None:
    admin.put_queue(queue, maxPending=1, retryAfterSeconds=7)
    client.send(queue, 1)
    with pytest.raises(AdmissionRefusedError) as refused:
        client.send(queue, 2)
    assert refused.value.code == "queue_full" and refused.value.status == 503
    assert refused.value.retry_after_seconds is not None and refused.value.retry_after_seconds > 0


def test_bad_requests_raise_typed_errors(client: SluiceClient, server_url: str) -> None:
    with pytest.raises(SluiceError) as missing:
        client.get("999999999")
    assert missing.value.code == "job_not_found" and missing.value.status == 404
    with pytest.raises(SluiceError) as unauthorized:
        SluiceClient(server_url, "wrong-token").get("1")
    assert unauthorized.value.status == 401
    with pytest.raises(ValueError):
        SluiceClient(server_url, "")
    # A port just released on loopback: nothing listens there.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(SluiceError) as unreachable:
        SluiceClient("http://127.0.0.1:%d" % port, "t", timeout_seconds=5).get("1")
    assert unreachable.value.code == "unreachable"


def _server_long_polls(admin: Any) -> bool:
    """Whether this server has `GET /api/jobs/{id}?waitMs=` (the contract wait_for is written to)."""
    operation = admin.openapi()["paths"].get("/api/jobs/{id}", {}).get("get", {})
    return any(p.get("name") == "waitMs" for p in operation.get("parameters", []))


def test_wait_for_returns_the_result_once_the_job_is_final(client: SluiceClient, admin: Any, queue: str) -> None:
    if not _server_long_polls(admin):
        pytest.skip("this server does not long-poll GET /api/jobs/:id?waitMs= yet")
    job_id = client.send(queue, {"n": 21}).id
    with pytest.raises(WaitTimeoutError) as timed_out:
        client.wait_for(job_id, timeout_seconds=0.3, poll_ms=100)
    assert timed_out.value.job.state == "pending"

    worker = Worker(client, queue, lambda c: {"doubled": c.job.data["n"] * 2}, poll_seconds=0.1)
    waited: List[Any] = []
    waiter = threading.Thread(target=lambda: waited.append(client.wait_for(job_id, timeout_seconds=120)))
    waiter.start()
    runner = threading.Thread(target=worker.run, kwargs={"exit_when_idle": True})
    runner.start()
    try:
        waiter.join(150)
        assert not waiter.is_alive(), "wait_for did not return"
    finally:
        worker.stop()
        runner.join(90)
    [job] = waited
    assert job.state == "completed" and job.result == {"doubled": 42}


def test_a_worker_on_a_missing_queue_stops_with_the_reason(client: SluiceClient) -> None:
    worker = Worker(client, "no-such-queue", lambda context: None, poll_seconds=0.1)
    with pytest.raises(SluiceError) as missing:
        worker.run(exit_when_idle=True)
    assert missing.value.code == "queue_not_found" and missing.value.status == 404


def test_a_send_continues_the_callers_trace_and_a_claim_answers_it(client: SluiceClient, queue: str) -> None:
    trace_id, caller_span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    client.send(queue, {"traced": True}, trace_context={"traceparent": "00-%s-%s-01" % (trace_id, caller_span)})
    [job] = client.claim(queue)
    assert job.trace_context is not None and job.traceparent == job.trace_context["traceparent"]
    version, job_trace, send_span, flags = job.traceparent.split("-")
    # The server's send span: in the caller's trace, a span of its own.
    assert (version, job_trace, flags) == ("00", trace_id, "01")
    assert send_span != caller_span and len(send_span) == 16
    client.complete(job.id, job.lease_token, None)


def test_a_flow_and_its_child_claimed_with_the_parents_results(client: SluiceClient, queue: str) -> None:
    ids = client.send_flow([
        {"ref": "tests", "queue": queue, "data": "unit"},
        {"ref": "grade", "queue": queue, "data": None, "depends_on": ["tests"]},
    ])
    assert client.get(ids["grade"].id).state == "waiting"
    [parent] = client.claim(queue)
    assert parent.id == ids["tests"].id
    client.complete(parent.id, parent.lease_token, {"passed": 12})
    [child] = client.claim(queue)
    assert child.id == ids["grade"].id
    assert [(p["id"], p["result"]) for p in child.parents or []] == [(ids["tests"].id, {"passed": 12})]
    client.complete(child.id, child.lease_token, None)
    later = client.send(queue, "after", depends_on=[child.id])
    assert client.get(later.id).state == "pending", "its parent has ended"
    with pytest.raises(SluiceError) as refused:
        client.send_flow([{"ref": "a", "queue": queue, "depends_on": ["a"]}])
    assert refused.value.code == "flow_invalid"


def test_progress_and_log_lines_from_a_worker(client: SluiceClient, queue: str) -> None:
    job_id = client.send(queue, {"rows": 2}).id

    def handler(context: JobContext) -> Any:
        for done in (1, 2):
            context.log("row %d" % done)
            context.progress({"done": done, "total": 2})
        return "ok"

    Worker(client, queue, handler, concurrency=1, lease_seconds=30, poll_seconds=0.1).run(exit_when_idle=True)
    assert client.get(job_id).raw["progress"] == {"done": 2, "total": 2}
    logs = client.logs(job_id)
    assert [(line["seq"], line["line"]) for line in logs["lines"]] == [(1, "row 1"), (2, "row 2")]
    with pytest.raises(LeaseLostError):
        client.log(job_id, "00000000-0000-0000-0000-000000000000", "late")


def test_a_singleton_period_and_a_debounced_send(client: SluiceClient, queue: str) -> None:
    first = client.send(queue, "a", singleton_key="deadline:1", singleton_period_ms=3_600_000)
    [held] = client.claim(queue)
    client.complete(held.id, held.lease_token, None)
    again = client.send(queue, "b", singleton_key="deadline:1", singleton_period_ms=3_600_000)
    assert (again.id, again.deduplicated) == (first.id, True)
    one = client.send(queue, {"v": 1}, debounce_key="sync", debounce_delay_ms=3_600_000)
    two = client.send(queue, {"v": 2}, debounce_key="sync", debounce_delay_ms=3_600_000, debounce_max_delay_ms=7_200_000)
    assert (two.id, two.deduplicated) == (one.id, True)
    assert client.get(one.id).data == {"v": 2}
