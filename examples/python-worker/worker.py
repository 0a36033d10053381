#!/usr/bin/env python3
"""A Sluice worker in Python, on the Python client (clients/python, standard library only).

It claims jobs from a queue and runs `handle(context)` on each: the returned value completes
the job, an exception fails it with its traceback (Sluice retries with backoff, then keeps
the job as a dead letter). The client heartbeats each job's lease while it runs; when a
heartbeat says the job was cancelled, `context.cancelled` is set and the handler stops.

    pip install ../../clients/python
    SLUICE_URL=http://127.0.0.1:8080 SLUICE_API_TOKEN=... python3 worker.py --queue demo

Options: --concurrency N (jobs at once), --lease-seconds S, --exit-when-idle (stop once a
claim comes back empty and nothing runs; used by the tests), --poll-seconds S.
"""
import argparse
import logging
import os
import sys

from sluice_client import JobContext, SluiceClient, Worker


def handle(context: JobContext):
    """The work itself. Replace with yours: return a JSON value, or raise to fail the attempt."""
    data = context.job.data or {}
    if isinstance(data, dict) and data.get("fail"):
        raise ValueError("asked to fail: %r" % (data.get("fail"),))
    if isinstance(data, dict) and isinstance(data.get("waitSeconds"), (int, float)):
        # Long work, in steps: a cancellation stops it between two (raises JobCancelledError).
        for _ in range(int(data["waitSeconds"] * 10)):
            if context.cancelled.wait(0.1):
                break
        context.raise_if_cancelled()
        return {"waited": data["waitSeconds"], "by": "python"}
    if isinstance(data, dict) and isinstance(data.get("n"), (int, float)):
        return {"doubled": data["n"] * 2, "by": "python"}
    return {"echo": data, "by": "python"}


def main() -> int:
    parser = argparse.ArgumentParser(description="A Sluice pull worker")
    parser.add_argument("--queue", required=True)
    parser.add_argument("--url", default=os.environ.get("SLUICE_URL", "http://127.0.0.1:8080"))
    parser.add_argument("--concurrency", type=int, default=5)
    parser.add_argument("--lease-seconds", type=int, default=60)
    parser.add_argument("--heartbeat-seconds", type=float, default=None)
    parser.add_argument("--poll-seconds", type=float, default=1.0)
    parser.add_argument("--exit-when-idle", action="store_true")
    args = parser.parse_args()
    token = os.environ.get("SLUICE_API_TOKEN")
    if not token:
        parser.error("set SLUICE_API_TOKEN")
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    worker = Worker(
        SluiceClient(args.url, token),
        args.queue,
        handle,
        concurrency=args.concurrency,
        lease_seconds=args.lease_seconds,
        heartbeat_seconds=args.heartbeat_seconds,
        poll_seconds=args.poll_seconds,
    )
    try:
        worker.run(exit_when_idle=args.exit_when_idle)
    except KeyboardInterrupt:
        worker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
