"""What a log line is about, kept in context variables so any logger can add it (issue 21): the
tenant (its schema), the turn, and a trace id that follows one request into the tasks it queues.

Set at the start of each unit of work, never reset at its end: a thread takes one request or one
task at a time, and the next one sets everything again (`request_started`, `task_started`), so
nothing of one unit reaches another's lines. The turn runner adds its turn (`turn_started`)."""

import re
import uuid
from contextvars import ContextVar

tenant: ContextVar[str | None] = ContextVar("asixto_log_tenant", default=None)
turn: ContextVar[str | None] = ContextVar("asixto_log_turn", default=None)
trace_id: ContextVar[str | None] = ContextVar("asixto_log_trace_id", default=None)

TRACE_HEADER = "asixto_trace_id"  # the Celery message header that carries it into tasks
_GIVEN_TRACE = re.compile(r"[A-Za-z0-9._-]{8,64}")


def _schema(schema_name):
    return None if schema_name in (None, "", "public") else schema_name


def request_started(*, request_id=None):
    """A web request begins: a caller's X-Request-ID (if it looks like one) or a new trace id."""
    given = request_id if request_id and _GIVEN_TRACE.fullmatch(request_id) else None
    trace_id.set(given or uuid.uuid4().hex)
    tenant.set(None)
    turn.set(None)


def tenant_resolved(*, schema_name):
    tenant.set(_schema(schema_name))


def task_started(*, schema_name, trace=None):
    """A Celery task begins in `schema_name`, queued under `trace` (or its own new trace)."""
    trace_id.set(trace if trace and _GIVEN_TRACE.fullmatch(str(trace)) else uuid.uuid4().hex)
    tenant.set(_schema(schema_name))
    turn.set(None)


def turn_started(*, schema_name, turn_id):
    """Called by the turn runner when it takes a turn."""
    tenant.set(_schema(schema_name))
    turn.set(str(turn_id))


def current() -> dict:
    """The known fields only."""
    fields = {"tenant": tenant.get(), "turn": turn.get(), "trace_id": trace_id.get()}
    return {name: value for name, value in fields.items() if value is not None}
