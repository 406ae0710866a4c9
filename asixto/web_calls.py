"""Calls the web tier makes to a tenant's own systems while a request waits for them: the model
endpoint's connection test, an MCP server's prompts and resources, the console's invoke. Each
holds a web thread for as long as the tenant's system takes (up to 30 s), so one tenant that
sends many at once (or points them at a server that never answers) must not take every thread
of the web tier from the others (a security review: 24 model tests made another tenant's plain
GET wait 47 s).

`web_call_slot()` lets a call in when its tenant has fewer than ASIXTO_WEB_CALLS_PER_TENANT
running (counted in Redis across processes: a sorted set per schema, each call with its start,
so one a dead process never removed drops out after MAX_CALL_SECONDS) and this process fewer than
ASIXTO_WEB_CALLS_PER_PROCESS; otherwise it raises Throttled (429 with Retry-After) before
anything is sent."""

import threading
import time
import uuid
from contextlib import contextmanager

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiResponse
from rest_framework.exceptions import Throttled

RETRY_SECONDS = 5
# How the OpenAPI schema documents the refusal, on each operation that takes a slot.
BUSY = OpenApiResponse(description="Too many calls to the account's systems are running now; retry after `Retry-After` seconds.")
MAX_CALL_SECONDS = 120  # longer than any call the web tier makes: a slot older than this is stale
_lock = threading.Lock()
_running_here = 0


@contextmanager
def web_call_slot():
    """A slot for one call of the current tenant for the block; Throttled when there is none."""
    global _running_here
    name, member, now = f"asixto:web-calls:{connection.schema_name}", uuid.uuid4().hex, time.time()
    client = cache._cache.get_client(write=True)
    with _lock:
        if _running_here >= settings.ASIXTO_WEB_CALLS_PER_PROCESS:
            raise Throttled(wait=RETRY_SECONDS, detail=_("This server is busy with calls to your systems; try again shortly."))
        _running_here += 1
    try:
        with client.pipeline() as pipe:
            pipe.zremrangebyscore(name, "-inf", now - MAX_CALL_SECONDS)
            pipe.zadd(name, {member: now})
            pipe.zcard(name)
            pipe.expire(name, MAX_CALL_SECONDS)
            running = pipe.execute()[2]
        try:
            if running > settings.ASIXTO_WEB_CALLS_PER_TENANT:
                raise Throttled(wait=RETRY_SECONDS, detail=_(
                    "Too many calls to your systems are running for this account; try again shortly."))
            yield
        finally:
            client.zrem(name, member)
    finally:
        with _lock:
            _running_here -= 1
