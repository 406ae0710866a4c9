"""How many event streams may be open at once (issue 19, M3): a stream holds a connection for up
to ASIXTO_EVENT_STREAM_SECONDS, and under a threaded WSGI server a thread too, so one client that
opens many must not stall the web tier for everyone.

- per channel key: ASIXTO_STREAMS_PER_KEY; per tenant (keys and dashboard together):
  ASIXTO_STREAMS_PER_TENANT. Counted in Redis, one sorted set per key and per tenant, holding
  each open stream with its start time: a stream is removed when its response closes, and one a
  dead process never removed drops out once it is older than any stream can be.
- per WSGI process: ASIXTO_STREAMS_PER_PROCESS (default half of WEB_THREADS), so a process always
  has threads left for health checks and every other request. ASGI servers (uvicorn), where a
  stream costs no thread, have no such cap: serve streams from one for many at once.
Beyond any of them the stream is refused (429 with Retry-After) before it starts.
"""

from django.conf import settings

from asixto import slots

RETRY_SECONDS = 5
_process = slots.ProcessSlots(lambda: settings.ASIXTO_STREAMS_PER_PROCESS)


class StreamsFull(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message
        self.retry_after = RETRY_SECONDS


def open_slot(*, schema: str, key_id=None, threaded: bool):
    """Take a slot for one stream; returns the function that gives it back (call it once the
    response closes). Raises StreamsFull when the key, the tenant or this process is at its limit."""
    from django.utils.translation import gettext as _

    sets = {f"asixto:streams:{schema}": settings.ASIXTO_STREAMS_PER_TENANT}
    if key_id is not None:
        sets[f"asixto:streams:{schema}:key:{key_id}"] = settings.ASIXTO_STREAMS_PER_KEY
    try:
        # A stream is open at most ASIXTO_EVENT_STREAM_SECONDS: one older was left by a dead process.
        return slots.take(sets=sets, lifetime=settings.ASIXTO_EVENT_STREAM_SECONDS + 60,
                          process=_process if threaded else None)
    except slots.Full as full:
        if full.where == "process":
            raise StreamsFull(_("This server is busy with event streams; try again shortly.")) from None
        raise StreamsFull(_("Too many event streams are open for this account or key; close one or try again shortly.")) from None
