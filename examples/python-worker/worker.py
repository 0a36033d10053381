#!/usr/bin/env python3
"""A Sluice worker in Python, using only the standard library and the pull-worker HTTP API.

It claims jobs from a queue, runs `handle(job)` on each, and completes the job with the
returned result, or fails it with the exception and its traceback (Sluice retries with
backoff, then keeps the job as a dead letter). While a job runs, a thread heartbeats its
lease; if the lease is lost (HTTP 409) the result is discarded, as Sluice fences it out.

    SLUICE_URL=http://127.0.0.1:8080 SLUICE_API_TOKEN=... python3 worker.py --queue demo

Options: --batch N (jobs per claim), --lease-seconds S, --exit-when-idle (stop once a claim
comes back empty; used by the tests), --poll-seconds S (wait between empty claims).
"""
import argparse
import json
import os
import socket
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request


class LeaseLost(Exception):
    """The server answered 409: the lease expired, the job was cancelled or finished."""


class SluiceClient:
    def __init__(self, url, token, timeout_seconds=30):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_seconds = timeout_seconds

    def post(self, path, body):
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode("utf-8"),
            method="POST",
            headers={"Authorization": "Bearer " + self.token, "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_seconds) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as error:
            answer = json.loads(error.read().decode("utf-8") or "{}")
            if error.code == 409:
                raise LeaseLost(answer.get("message", "lease lost")) from None
            raise RuntimeError("%s %s: HTTP %d %s: %s" % ("POST", path, error.code, answer.get("error"), answer.get("message"))) from None

    def claim(self, queue, max_jobs, lease_seconds, worker_id):
        body = {"max": max_jobs, "leaseSeconds": lease_seconds, "workerId": worker_id}
        return self.post("/api/queues/%s/claim" % queue, body)["jobs"]

    def heartbeat(self, job_id, lease_token, lease_seconds):
        return self.post("/api/jobs/%s/heartbeat" % job_id, {"leaseToken": lease_token, "leaseSeconds": lease_seconds})

    def complete(self, job_id, lease_token, result):
        return self.post("/api/jobs/%s/complete" % job_id, {"leaseToken": lease_token, "result": result})

    def fail(self, job_id, lease_token, exception):
        error = {
            "message": str(exception) or type(exception).__name__,
            "name": type(exception).__name__,
            "stack": "".join(traceback.format_exception(type(exception), exception, exception.__traceback__)),
        }
        return self.post("/api/jobs/%s/fail" % job_id, {"leaseToken": lease_token, "error": error})


def handle(job):
    """The work itself. Replace with yours: return a JSON value, or raise to fail the attempt."""
    data = job["data"] or {}
    if isinstance(data, dict) and data.get("fail"):
        raise ValueError("asked to fail: %r" % (data.get("fail"),))
    if isinstance(data, dict) and isinstance(data.get("n"), (int, float)):
        return {"doubled": data["n"] * 2, "by": "python"}
    return {"echo": data, "by": "python"}


class Heartbeat(threading.Thread):
    """Extends the lease every third of it while the handler runs."""

    def __init__(self, client, job, lease_seconds):
        super().__init__(daemon=True)
        self.client, self.job, self.lease_seconds = client, job, lease_seconds
        self.stopped = threading.Event()
        self.lost = False

    def run(self):
        while not self.stopped.wait(max(1.0, self.lease_seconds / 3.0)):
            try:
                self.client.heartbeat(self.job["id"], self.job["leaseToken"], self.lease_seconds)
            except LeaseLost:
                self.lost = True
                return
            except Exception as error:  # a transient failure: the next beat may succeed
                print("heartbeat of job %s failed: %s" % (self.job["id"], error), file=sys.stderr)


def run_job(client, job, lease_seconds):
    beat = Heartbeat(client, job, lease_seconds)
    beat.start()
    try:
        try:
            result = handle(job)
        except Exception as error:
            beat.stopped.set()
            client.fail(job["id"], job["leaseToken"], error)
            print("job %s failed: %s" % (job["id"], error))
            return
        beat.stopped.set()
        client.complete(job["id"], job["leaseToken"], result)
        print("job %s completed" % job["id"])
    except LeaseLost as lost:
        print("job %s: result discarded, %s" % (job["id"], lost), file=sys.stderr)
    finally:
        beat.stopped.set()


def main():
    parser = argparse.ArgumentParser(description="A Sluice pull worker")
    parser.add_argument("--queue", required=True)
    parser.add_argument("--url", default=os.environ.get("SLUICE_URL", "http://127.0.0.1:8080"))
    parser.add_argument("--batch", type=int, default=5)
    parser.add_argument("--lease-seconds", type=int, default=60)
    parser.add_argument("--poll-seconds", type=float, default=1.0)
    parser.add_argument("--exit-when-idle", action="store_true")
    args = parser.parse_args()
    token = os.environ.get("SLUICE_API_TOKEN")
    if not token:
        parser.error("set SLUICE_API_TOKEN")
    client = SluiceClient(args.url, token)
    worker_id = "python:%s:%d" % (socket.gethostname(), os.getpid())
    while True:
        jobs = client.claim(args.queue, args.batch, args.lease_seconds, worker_id)
        if not jobs:
            if args.exit_when_idle:
                return 0
            time.sleep(args.poll_seconds)
            continue
        for job in jobs:
            run_job(client, job, args.lease_seconds)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(0)
