"""EchoMQ's client over its HTTP API (``emq serve``): enqueue, wait for
outcomes, work jobs in a loop, operate queues. Standard library only."""

from .client import Client
from .errors import Cancelled, Delay, EchoMQError, Permanent, RateLimited, Timeout
from .models import Claimed, Enqueued, Event, JobOptions, JobPage, NewJob, Outcome, QueueInfo
from .worker import Job, Worker

__all__ = [
    "Cancelled",
    "Claimed",
    "Client",
    "Delay",
    "EchoMQError",
    "Enqueued",
    "Event",
    "Job",
    "JobOptions",
    "JobPage",
    "NewJob",
    "Outcome",
    "Permanent",
    "QueueInfo",
    "RateLimited",
    "Timeout",
    "Worker",
]
