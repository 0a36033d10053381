"""Sluice's Python client: send jobs and wait for their results, and run pull workers
with heartbeats and fenced completion. Standard library only."""
from .client import SluiceClient
from .errors import AdmissionRefusedError, JobCancelledError, LeaseLostError, SluiceError, WaitTimeoutError
from .models import FINAL_STATES, ClaimedJob, Heartbeat, Job, SendResult
from .worker import Handler, JobContext, Worker

__all__ = [
    "AdmissionRefusedError",
    "ClaimedJob",
    "FINAL_STATES",
    "Handler",
    "Heartbeat",
    "Job",
    "JobCancelledError",
    "JobContext",
    "LeaseLostError",
    "SendResult",
    "SluiceClient",
    "SluiceError",
    "WaitTimeoutError",
    "Worker",
]
__version__ = "0.1.0"
