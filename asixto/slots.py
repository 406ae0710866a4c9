"""Bounded slots for work that holds a web thread while it waits: event streams
(runtime/stream_slots.py) and calls out to a tenant's systems (asixto/web_calls.py).

Shared counts (per tenant, per key) live in Redis, one sorted set each, holding every slot taken
with its start time, so processes on every machine count together; a slot a dead process never
gave back drops out once it is older than `lifetime`. A process's own count (`ProcessSlots`)
keeps threads for everything else a threaded server does. `take` raises `Full` naming which
bound was reached, before anything is taken."""

import threading
import time
import uuid

from django.core.cache import cache


class Full(Exception):
    def __init__(self, where: str):
        super().__init__(where)
        self.where = where  # "shared" (a Redis count) or "process"


class ProcessSlots:
    """One process's count of a kind of slot, up to `limit()` (read at each take: settings change in tests)."""

    def __init__(self, limit):
        self._limit = limit
        self._lock = threading.Lock()
        self._taken = 0

    def enter(self) -> bool:
        with self._lock:
            if self._taken >= self._limit():
                return False
            self._taken += 1
            return True

    def leave(self) -> None:
        with self._lock:
            self._taken -= 1


def take(*, sets: dict[str, int], lifetime: float, process: ProcessSlots | None = None):
    """Take a slot in each Redis set of `sets` (name → limit) and, when given, in `process`;
    returns the function that gives them all back (safe to call more than once)."""
    member, now = uuid.uuid4().hex, time.time()
    client = cache._cache.get_client(write=True)
    with client.pipeline() as pipe:
        for name in sets:
            pipe.zremrangebyscore(name, "-inf", now - lifetime)
            pipe.zcard(name)
        counts = pipe.execute()[1::2]
    if any(count >= limit for count, limit in zip(counts, sets.values(), strict=True)):
        raise Full("shared")
    if process is not None and not process.enter():
        raise Full("process")
    with client.pipeline() as pipe:
        for name in sets:
            pipe.zadd(name, {member: now})
            pipe.expire(name, int(lifetime) + 60)
        pipe.execute()
    released = threading.Event()

    def release():
        if released.is_set():
            return
        released.set()
        if process is not None:
            process.leave()
        with client.pipeline() as pipe:
            for name in sets:
                pipe.zrem(name, member)
            pipe.execute()

    return release
