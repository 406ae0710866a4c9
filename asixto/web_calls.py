"""Calls the web tier makes to a tenant's own systems while a request waits for them: the model
endpoint's connection test, an MCP server's prompts and resources, the console's invoke. Each
holds a web thread for as long as the tenant's system takes (up to 30 s), so one tenant that
sends many at once (or points them at a server that never answers) must not take every thread
of the web tier from the others (a security review: 24 model tests made another tenant's plain
GET wait 47 s).

`web_call_slot()` lets a call in when its tenant has fewer than ASIXTO_WEB_CALLS_PER_TENANT
running (counted across processes, asixto/slots.py; one a dead process never gave back drops out
after MAX_CALL_SECONDS) and this process fewer than ASIXTO_WEB_CALLS_PER_PROCESS; otherwise it
raises Throttled (429 with Retry-After) before anything is sent."""

from contextlib import contextmanager

from django.conf import settings
from django.db import connection
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiResponse
from rest_framework.exceptions import Throttled

from asixto import slots

RETRY_SECONDS = 5
# How the OpenAPI schema documents the refusal, on each operation that takes a slot.
BUSY = OpenApiResponse(description="Too many calls to the account's systems are running now; retry after `Retry-After` seconds.")
MAX_CALL_SECONDS = 120  # longer than any call the web tier makes: a slot older than this is stale
_process = slots.ProcessSlots(lambda: settings.ASIXTO_WEB_CALLS_PER_PROCESS)


@contextmanager
def web_call_slot():
    """A slot for one call of the current tenant for the block; Throttled when there is none."""
    try:
        release = slots.take(sets={f"asixto:web-calls:{connection.schema_name}": settings.ASIXTO_WEB_CALLS_PER_TENANT},
                             lifetime=MAX_CALL_SECONDS, process=_process)
    except slots.Full as full:
        detail = (_("This server is busy with calls to your systems; try again shortly.") if full.where == "process"
                  else _("Too many calls to your systems are running for this account; try again shortly."))
        raise Throttled(wait=RETRY_SECONDS, detail=detail) from None
    try:
        yield
    finally:
        release()
