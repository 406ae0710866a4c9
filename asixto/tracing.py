"""Traces (OpenTelemetry): one trace per turn, from the channel API request through the Celery
task to the turn's routing, each model call and each tool call through the gateway.

Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` is set: then `setup()` (once per process: the web
process in asixto/wsgi.py, a worker from asixto/celery.py's worker signals) installs an SDK
TracerProvider that exports over OTLP/HTTP in batches, the Django, Celery and httpx
instrumentations, and with ASIXTO_TRACE_SQL=1 our own SQL spans (below). With no endpoint nothing
is installed, and every hook below costs one check of a module variable (P1, P3).

The hooks the runtime and the gateway use:
    @tracing.turn          on the turn service's run: a `turn` span, its tenant, conversation and
                           turn copied onto every span started inside it (`asixto.*`)
    @tracing.model_request on the model client's `complete`: `model.request` (model, outcome, tokens)
    @tracing.tool_call     on the gateway's `call_tool`: `tool.call` (tool, server, level, outcome, attempts)
    tracing.span(name, **attributes)   a span for a block (`routing`)
    tracing.annotate(**attributes)     attributes on the current span
    tracing.routed(tool=…, record=…)   the routing decision on the current span
    tracing.current_trace_id()         the trace id to store on a turn (32 hex), or None
    tracing.http_request(method, url, headers)
                           around one request of the model client or the gateway, whose clients
                           the httpx instrumentation leaves alone (tenants/outbound_http.py,
                           `http_spans=False`): a CLIENT span of ours (method, server, URL, status,
                           error type) and its `traceparent` put into `headers`, so the model
                           server or MCP server joins the trace; `.answered(status)` on what it yields

SQL (ASIXTO_TRACE_SQL=1, off by default: about 20 spans more per turn, README "Sampling, and what
metrics and traces cost"): while tracing is on, each database connection gets an execute wrapper
(Django's `execute_wrappers`, added as the connection is made: `connection_created`) that gives
each statement of a kept trace a CLIENT span: db.system, db.operation and the statement as Django
sends it (placeholders, never the parameters; a string literal written into it blanked). The
psycopg instrumentation cannot do it: Django sets its own cursor class on each connection,
replacing the instrumented one (open-telemetry/opentelemetry-python-contrib#1774).

Which traces are kept is the SDK's sampler's choice (OTEL_TRACES_SAMPLER, by default every one).
A turn left out stores no trace id, and its model and tool requests and its SQL statements get no
span and carry no trace context: each hook asks whether the current span is recording first. A
request or statement outside any trace (a shell, a management command) gets none either. What
each costs: README "Sampling, and what metrics and traces cost" (bench/observability_cost.py).

What never reaches an exported span (T7, and the customer's privacy): prompts, replies, tool
arguments and results, secrets. Our spans carry ids, names, counts and outcomes only; the
customer's message and a tool's arguments are added (cut to 1,000 characters) only when the
tenant turns "trace contents" on. Whatever the instrumentations record is cleaned on its way out
(asixto/trace_scrub.py).
"""

import functools
import json
import os
import re
from contextlib import nullcontext
from contextvars import ContextVar
from types import SimpleNamespace
from urllib.parse import urlsplit

from asixto.trace_scrub import Scrubbed, blanked, without_query

CONTENTS_CHARS = 1000
TENANT, CONVERSATION, TURN = "asixto.tenant", "asixto.conversation", "asixto.turn"
DEFAULT_EXCLUDED_URLS = "static/,favicon.ico"

_provider = None  # the SDK TracerProvider when tracing is on
_tracer = None
_current_span = None  # opentelemetry.trace.get_current_span, once tracing is on
# What the hooks use of the API once tracing is on, imported then (nothing is imported while it is off).
_otel = SimpleNamespace(client=None, error=None, inject=None, in_context=None)
_OFF = nullcontext()
# The turn being traced on this thread: attributes every span gets, and whether contents may go in.
_scope: ContextVar = ContextVar("asixto_trace_scope", default=None)


def enabled() -> bool:
    return _tracer is not None


def setup(*, service: str = "asixto-web", exporter=None) -> bool:
    """Install tracing for this process, once; True if it is on. `exporter` (tests: the SDK's
    InMemorySpanExporter) replaces the OTLP exporter and is sent each span as it ends."""
    global _provider, _tracer, _current_span
    if _provider is not None:
        return True
    if exporter is None and not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return False
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # Endpoint, headers (a collector's token) and timeouts from the standard OTEL_EXPORTER_OTLP_* variables.
        processor = BatchSpanProcessor(Scrubbed(OTLPSpanExporter()))
    else:
        processor = SimpleSpanProcessor(Scrubbed(exporter))
    provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or service}))
    provider.add_span_processor(_ScopeAttributes())
    provider.add_span_processor(processor)
    # Not the global provider: libraries that trace on their own (the MCP SDK) stay out, since what
    # their spans carry was never checked; the instrumentations get this provider by hand.
    _instrument(provider)
    from opentelemetry.propagate import inject
    from opentelemetry.trace import SpanKind, Status, StatusCode, get_current_span, set_span_in_context

    _otel.client, _otel.error, _otel.inject, _otel.in_context = SpanKind.CLIENT, Status(StatusCode.ERROR), inject, set_span_in_context
    _provider, _tracer, _current_span = provider, provider.get_tracer("asixto"), get_current_span
    from django.conf import settings

    if settings.ASIXTO_TRACE_SQL:
        _trace_sql_connections(on=True)
    return True


def flush():
    """Send the spans still batched (a worker process about to exit)."""
    if _provider is not None:
        _provider.force_flush()


def shutdown():
    """Flush and remove what `setup()` installed (tests; a process that ends)."""
    global _provider, _tracer
    if _provider is None:
        return
    for instrumentor in _instrumentors():
        instrumentor.uninstrument()
    _trace_sql_connections(on=False)
    provider, _provider, _tracer = _provider, None, None
    provider.shutdown()


def _instrumentors():
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor

    return DjangoInstrumentor(), CeleryInstrumentor(), HTTPXClientInstrumentor()


def _instrument(provider):
    django, celery, httpx = _instrumentors()
    # No header is captured (OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_* unset; `Scrubbed` drops any anyway).
    django.instrument(tracer_provider=provider,
                      excluded_urls=os.environ.get("OTEL_PYTHON_DJANGO_EXCLUDED_URLS") or DEFAULT_EXCLUDED_URLS)
    # Continues the publisher's trace from the task message's headers (JSON messages carry them as they are).
    celery.instrument(tracer_provider=provider)
    # For the httpx clients that do not trace their requests themselves (webhooks, the built-in
    # tools' pages); the model client's and the gateway's pass it by (`http_request`).
    httpx.instrument(tracer_provider=provider)


# ---------------------------------------------------------------- hooks

def current_trace_id() -> str | None:
    """The current trace's id as 32 hex digits, or None (tracing off, no span, or a trace the
    sampler left out: nobody could find it)."""
    if _tracer is None:
        return None
    context = _current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid and context.trace_flags.sampled else None


def span(name: str, **attributes):
    """A span for a block (a no-op context when tracing is off)."""
    if _tracer is None:
        return _OFF
    return _tracer.start_as_current_span(name, attributes=attributes)


def annotate(**attributes):
    """Attributes on the current span (nothing when tracing is off). None values are left out."""
    if _tracer is None:
        return
    current = _current_span()
    if current.is_recording():  # not when a sampler left this trace out
        current.set_attributes({key: value for key, value in attributes.items() if value is not None})


def routed(*, tool: str | None, record: dict):
    """The routing decision on the current span: how many candidate tools the check found, the
    outcome, the tool routed to. Never the facts the router read out of the message."""
    if _tracer is None:
        return
    gate = record.get("gate") or {}
    outcome = record.get("outcome") or ("asked" if "router" in record else "no_tool")
    annotate(**{"asixto.routing.candidates": len(gate.get("candidates") or ()), "asixto.outcome": outcome,
                "asixto.routing.tool": tool})


def contents(text) -> str | None:
    """`text` (a string, or a value written as JSON) cut to CONTENTS_CHARS, if the traced tenant
    allows contents in traces; else None, and nothing is added."""
    scope = _scope.get()
    if scope is None or not scope[1]:
        return None
    if not isinstance(text, str):
        text = json.dumps(text, ensure_ascii=False, default=str)
    return text[:CONTENTS_CHARS]


def turn(function):
    """On the turn service's `_run(turn, …)`: a `turn` span whose tenant, conversation and turn
    every span inside it carries; the customer's message too when the tenant allows contents."""

    @functools.wraps(function)
    def traced(turn, *args, **kwargs):
        if _tracer is None:
            return function(turn, *args, **kwargs)
        from tenants.selectors import current_tenant

        tenant = current_tenant()
        common = {TENANT: tenant.slug, CONVERSATION: str(turn.conversation_id), TURN: str(turn.pk)}
        annotate(**common)  # the Celery task's span, started before the turn was known
        token = _scope.set((common, bool(tenant.trace_contents)))
        try:
            with _tracer.start_as_current_span("turn", attributes={"asixto.runs": turn.runs}) as current:
                if tenant.trace_contents:
                    current.set_attribute("asixto.message.text", contents(turn.message.text))
                return function(turn, *args, **kwargs)
        finally:
            _scope.reset(token)

    return traced


def model_request(function):
    """On the model client's `complete(*, endpoint, …)`: one `model.request` span per call, with the
    model's name, the outcome (`ok` or the ModelError code) and the tokens the answer reports.
    Never the prompt or the answer."""

    @functools.wraps(function)
    def traced(*, endpoint, **kwargs):
        if _tracer is None:
            return function(endpoint=endpoint, **kwargs)
        with _tracer.start_as_current_span("model.request", attributes={"asixto.model": endpoint.model}) as current:
            if not current.is_recording():
                return function(endpoint=endpoint, **kwargs)
            try:
                answer = function(endpoint=endpoint, **kwargs)
            except Exception as exc:
                current.set_attribute("asixto.outcome", getattr(exc, "code", None) or type(exc).__name__)
                raise
            current.set_attributes({key: value for key, value in (
                ("asixto.outcome", "ok"), ("asixto.tool_calls", len(answer.tool_calls)),
                ("gen_ai.usage.input_tokens", answer.tokens_in), ("gen_ai.usage.output_tokens", answer.tokens_out),
            ) if value is not None})
            return answer

    return traced


def tool_call(function):
    """On the gateway's `call_tool(*, arguments, context, …)`: one `tool.call` span per call, with
    the outcome and attempts (the gateway adds the tool, its server and level with `annotate`).
    Never the arguments or the result, unless the tenant allows contents (the arguments, cut)."""

    @functools.wraps(function)
    def traced(*, arguments, **kwargs):
        if _tracer is None:
            return function(arguments=arguments, **kwargs)
        with _tracer.start_as_current_span("tool.call") as current:
            if not current.is_recording():
                return function(arguments=arguments, **kwargs)
            shown = contents(arguments)
            if shown is not None:
                current.set_attribute("asixto.tool.arguments", shown)
            outcome = function(arguments=arguments, **kwargs)
            current.set_attributes({"asixto.outcome": str(outcome.outcome), "asixto.attempts": outcome.attempts})
            return outcome

    return traced


# ---------------------------------------------------------------- our own requests and statements

class _Untraced:
    """What `http_request` yields when there is nothing to trace."""

    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *_exception):
        return False

    def answered(self, status: int):
        pass


_UNTRACED = _Untraced()


class _Request(_Untraced):
    """What `http_request` yields for a traced request: its span, ended when the exchange is over
    (the answer read, or an exception: its code or type is the error, never its message)."""

    __slots__ = ("_span", "_failed")

    def __init__(self, span):
        self._span, self._failed = span, False

    def answered(self, status: int):
        """The response's status code; from 400 on the span is an error (HTTP client conventions)."""
        self._span.set_attribute("http.response.status_code", status)
        if status >= 400:
            self._failed = True
            self._span.set_attribute("error.type", str(status))
            self._span.set_status(_otel.error)

    def __exit__(self, kind, error, _traceback):
        if kind is not None and not self._failed:
            # Our own errors' short code (`model_timeout`, `compressed`), else the exception's type.
            code = getattr(error, "code", None)
            self._span.set_attribute("error.type", code if isinstance(code, str) else kind.__qualname__)
            self._span.set_status(_otel.error)
        self._span.end()
        return False


def http_request(method: str, url: str, headers: dict):
    """Around one request the caller sends through a client the httpx instrumentation leaves alone
    (see the module): a CLIENT span, child of the current one, and the trace context put into
    `headers` through the configured propagator (W3C `traceparent` by default). Nothing, and no
    context sent, with tracing off or in a trace the sampler left out: the server decides alone."""
    if _tracer is None or not _current_span().is_recording():
        return _UNTRACED
    span = _tracer.start_span(method, kind=_otel.client, attributes=_request_attributes(method, url))
    _otel.inject(headers, context=_otel.in_context(span))
    return _Request(span)


@functools.lru_cache(maxsize=1024)
def _request_attributes(method: str, url: str) -> dict:
    # Per server URL, parsed once: a process calls a few model endpoints and MCP servers.
    attributes = {"http.request.method": method, "url.full": without_query(url)}
    try:
        parts = urlsplit(url)
        port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    except ValueError:
        return attributes
    if parts.hostname:
        attributes["server.address"] = parts.hostname
    if port:
        attributes["server.port"] = port
    return attributes


_FIRST_WORD = re.compile(r"\s*\(*\s*([A-Za-z]+)")


def _sql_span(execute, sql, params, many, context):
    """A Django execute wrapper (see the module): the statement's CLIENT span, in a kept trace."""
    if _tracer is None or not _current_span().is_recording():
        return execute(sql, params, many, context)
    attributes = {"db.system": context["connection"].vendor}
    if isinstance(sql, str):
        word = _FIRST_WORD.match(sql)
        if word:
            attributes["db.operation"] = word.group(1).upper()
        attributes["db.statement"] = blanked(sql)
    span = _tracer.start_span(attributes.get("db.operation", "SQL"), kind=_otel.client, attributes=attributes)
    try:
        return execute(sql, params, many, context)
    except Exception as exc:
        span.set_attribute("error.type", type(exc).__qualname__)
        span.set_status(_otel.error)
        raise
    finally:
        span.end()


def _trace_sql(connection, **_signal):
    # First in the list (the outermost): `connection.execute_wrapper()` blocks pop the last one as
    # they end, and a connection may be made inside one.
    if _sql_span not in connection.execute_wrappers:
        connection.execute_wrappers.insert(0, _sql_span)


def _trace_sql_connections(*, on: bool):
    """On: each connection made from now on gets `_sql_span` (each thread has connections of its
    own), and so do this thread's already open. Off: no more; another thread's connections keep
    the wrapper, which does nothing with tracing off."""
    from django.db import connections
    from django.db.backends.signals import connection_created

    if on:
        connection_created.connect(_trace_sql, dispatch_uid="asixto-tracing-sql")
    else:
        connection_created.disconnect(dispatch_uid="asixto-tracing-sql")
    for connection in connections.all(initialized_only=True):
        if on:
            _trace_sql(connection)
        elif _sql_span in connection.execute_wrappers:
            connection.execute_wrappers.remove(_sql_span)


# ---------------------------------------------------------------- what every span gets, and loses

class _ScopeAttributes:
    """A span processor: every span started inside a traced turn (ours, and the instrumentations'
    HTTP and SQL spans) carries the turn's tenant, conversation and turn."""

    def on_start(self, span, parent_context=None):
        scope = _scope.get()
        if scope is not None:
            span.set_attributes(scope[0])

    def on_end(self, span):
        pass

    def _on_ending(self, span):
        pass

    def shutdown(self):
        pass

    def force_flush(self, timeout_millis=30000):
        return True
