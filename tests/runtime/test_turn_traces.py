"""Traces (issue 21, item 2; asixto/tracing.py): one trace per turn, from the channel API request
through the Celery task to routing, each model call and each tool call, with the SDK's in-memory
exporter standing in for the OTLP one; nothing secret or said by a customer in a span or a log
line unless the tenant turns "trace contents" on; nothing installed without an endpoint."""

import json
import logging
from contextlib import contextmanager

import pytest
from celery.contrib.testing.worker import start_worker
from django.conf import settings as django_settings
from django.db import connection
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from asixto import tracing
from asixto.celery import app
from examples.soporte.server import build_app
from runtime.models import Turn
from runtime.routing.index_store import build_live
from tests.runtime.runtime_support import agent, recording_app, register_soporte, run, wait_until_finished
from tests.support.asgi import lifespan, request_body
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, say
from tools.models import McpServer, ToolCall

SEARCH = "soporte__buscar_producto"
TEXT = "¿Tienen routers disponibles?"
ARGUMENTS = {"consulta": "fibra óptica ZX-9001"}
FACTS = {"tool": SEARCH, "request": "routers disponibles", "quantity": None, "references": None,
         "details": {"consulta": "router"}, "clear": True}
MODEL_KEY = "sk-test-secret-0042"  # what runtime_support.agent stores as the model's key
SERVER_SECRET = "srv-Secreto-4d5e6f7a8b"


@contextmanager
def tracing_to_memory():
    """Tracing on for the block, every span sent to memory as it ends."""
    exporter = InMemorySpanExporter()
    tracing.shutdown()  # a worker started earlier in this process with an endpoint in the environment
    assert tracing.setup(service="asixto-test", exporter=exporter)
    try:
        yield exporter
    finally:
        tracing.shutdown()


@pytest.fixture
def spans():
    with tracing_to_memory() as exporter:
        yield exporter


@pytest.fixture
def spans_with_sql(settings):
    """`spans`, with a span for each SQL statement too (ASIXTO_TRACE_SQL=1)."""
    settings.ASIXTO_TRACE_SQL = True
    with tracing_to_memory() as exporter:
        yield exporter


def soporte_with_secret(world, url):
    register_soporte(world, url)
    with world.schema():
        McpServer.objects.filter(slug="soporte").update(auth_headers=json.dumps({"X-Api-Key": SERVER_SECRET}))


@contextmanager
def log_lines():
    """Every line logged meanwhile, by any thread, at the levels a worker and the web process log
    with by default (LOG_LEVEL=INFO, the project's LOGGING): formatted, exception text included."""
    lines, root = [], logging.getLogger()
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(logging.Formatter("%(name)s %(message)s").format(record))
    before = root.level
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    try:
        yield lines
    finally:
        root.removeHandler(handler)
        root.setLevel(before)


def everything_in(finished) -> str:
    """Every name, attribute value, event, status and resource value of the spans, as one text."""
    parts = []
    for span in finished:
        parts += [span.name, span.status.description or "", *map(str, span.resource.attributes.values())]
        parts += [str(value) for value in span.attributes.values()]
        for event in span.events:
            parts += [event.name, *(str(value) for value in (event.attributes or {}).values())]
    return "\n".join(parts)


def named(finished, name):
    return [span for span in finished if span.name == name]


def parent_of(span, finished):
    by_id = {s.context.span_id: s for s in finished}
    return by_id.get(span.parent.span_id) if span.parent else None


def ancestors(span, finished):
    found = []
    while (span := parent_of(span, finished)) is not None:
        found.append(span)
    return found


def test_a_turn_through_the_api_and_a_worker_is_one_trace_without_secrets_or_customer_text(
        committed_world, django_db_blocker, spans, settings):
    """Issue 21 (traces), R1, R6, T7: a message posted through the channel API, its turn run by a
    real Celery worker (JSON messages through Redis), routed, with a model call and a tool call to
    a real MCP server that wants a secret header: the API request, the task, the turn, routing,
    every model call and the tool call are one trace, parent to child, and the turn stores its id;
    with the default settings no span and no log line holds the customer's text, the tool's
    arguments, the model's key or the server's secret."""
    settings.ASIXTO_ROUTING = True
    world, log, seen_by_model, seen_by_server = committed_world, [], [], []
    model = ScriptedModel([say(json.dumps(FACTS)), call(SEARCH, ARGUMENTS), say("ok"), say("Sí, hay routers.")])
    with django_db_blocker.unblock(), serve_asgi(headers_seen(recording_app(build_app(), log), seen_by_server)) as tool_url, \
            serve_asgi(headers_seen(model.app(), seen_by_model)) as model_url, agent(world, f"{model_url}/v1"):
        soporte_with_secret(world, tool_url)
        seen_by_server.clear()  # the sync's requests
        with world.schema():
            build_live()
        with start_worker(app, pool="threads", concurrency=2, perform_ping_check=False, loglevel="INFO"), \
                log_lines() as lines:
            connection.set_schema_to_public()
            client = world.api(world.channel_key)
            conversation = client.post("/api/v1/conversations", json.dumps({"channel_name": "web"}),
                                       content_type="application/json").json()
            response = client.post(conversation["messages_url"], json.dumps({"text": TEXT}), content_type="application/json")
            assert response.status_code == 202
            turn = wait_until_finished(world, response.json()["id"])
        tracing.flush()
    assert turn.status == Turn.Status.DONE and turn.reply.text == "Sí, hay routers.", turn.error_detail
    assert [r["params"]["arguments"] for r in log if r.get("method") == "tools/call"] == [ARGUMENTS]

    finished = spans.get_finished_spans()
    request = next(s for s in finished if s.kind.name == "SERVER" and "messages" in s.attributes.get("http.route", ""))
    trace_id = format(request.context.trace_id, "032x")
    assert turn.trace_id == trace_id
    task = next(s for s in named(finished, "run/runtime.tasks.turn_run") if s.attributes.get(tracing.TURN) == str(turn.pk))
    (turn_span,) = [s for s in named(finished, "turn") if s.attributes[tracing.TURN] == str(turn.pk)]
    in_turn = [s for s in finished if s.attributes.get(tracing.TURN) == str(turn.pk)]
    assert {format(s.context.trace_id, "032x") for s in [task, *in_turn]} == {trace_id}
    # request → (publish) → task → turn → routing → the router's model call; turn → model calls, tool call → HTTP
    assert request in ancestors(task, finished) and parent_of(turn_span, finished) is task
    (routing,) = named(in_turn, "routing")
    (tool,) = named(in_turn, "tool.call")
    models = named(in_turn, "model.request")
    assert parent_of(routing, finished) is turn_span and parent_of(tool, finished) is turn_span
    assert [parent_of(s, finished).name for s in models] == ["routing", "turn", "turn", "turn"]
    assert [s.attributes["asixto.outcome"] for s in models] == ["ok"] * 4
    assert models[1].attributes["asixto.model"] == "scripted" and models[1].attributes["gen_ai.usage.input_tokens"] == 1
    assert (routing.attributes["asixto.outcome"], routing.attributes["asixto.routing.tool"]) == ("routed", SEARCH)
    assert routing.attributes["asixto.routing.candidates"] >= 1
    assert {key: tool.attributes[key] for key in ("asixto.tool", "asixto.server", "asixto.tool.level", "asixto.outcome",
                                                  "asixto.attempts")} == {
        "asixto.tool": SEARCH, "asixto.server": "soporte", "asixto.tool.level": "read", "asixto.outcome": "ok",
        "asixto.attempts": 1}
    assert any(tool in ancestors(s, finished) for s in finished if s.kind.name == "CLIENT"), "the gateway's HTTP POST"
    # The model server and the MCP server were sent the turn's trace (W3C traceparent): they can join it.
    assert [h.get("mcp-method") for h in seen_by_server] == ["tools/call"] and len(seen_by_model) == 4
    assert {h.get("traceparent", "-").split("-")[1] for h in [*seen_by_model, *seen_by_server]} == {trace_id}
    common = {tracing.TENANT: world.tenant.slug, tracing.CONVERSATION: conversation["id"], tracing.TURN: str(turn.pk)}
    for span in (turn_span, routing, tool, *models):
        assert {key: span.attributes.get(key) for key in common} == common, span.name
    assert turn_span.attributes["asixto.outcome"] == "done" and "asixto.message.text" not in turn_span.attributes

    exported = everything_in(finished)
    logged = "\n".join(lines)
    assert "Task runtime.tasks.turn_run" in logged  # the worker's own lines are among them
    for secret in (TEXT, "routers disponibles", ARGUMENTS["consulta"], "ZX-9001", MODEL_KEY, SERVER_SECRET):
        assert secret not in exported, secret
        assert secret not in logged, secret


def test_with_trace_contents_on_the_message_and_arguments_are_in_the_spans_cut_to_1000(alpha, spans):
    """Issue 21 (traces), T6: the tenant's "trace contents" switch puts the customer's message on
    the turn's span and the tool's arguments on the tool call's, each cut to 1,000 characters;
    the turn's trace id is in its API output and on its dashboard page."""
    text = TEXT + " " + "muy largo " * 150
    model = ScriptedModel([call(SEARCH, ARGUMENTS), say("ok"), say("Sí, hay routers.")])
    with serve_asgi(build_app()) as tool_url, serve_asgi(model.app()) as model_url, \
            agent(alpha, f"{model_url}/v1", trace_contents=True):
        soporte_with_secret(alpha, tool_url)
        client = alpha.api(alpha.channel_key)
        conversation = client.post("/api/v1/conversations", "{}", content_type="application/json").json()
        posted = client.post(conversation["messages_url"], json.dumps({"text": text}), content_type="application/json")
        turn = run(alpha, Turn(pk=posted.json()["id"]))
    assert turn.status == Turn.Status.DONE, turn.error_detail
    finished = spans.get_finished_spans()
    (turn_span,) = named(finished, "turn")
    (tool,) = named(finished, "tool.call")
    assert turn_span.attributes["asixto.message.text"] == text[:1000] and len(text) > 1000
    assert json.loads(tool.attributes["asixto.tool.arguments"]) == ARGUMENTS
    exported = everything_in(finished)
    assert MODEL_KEY not in exported and SERVER_SECRET not in exported

    request = next(s for s in finished if s.kind.name == "SERVER" and "messages" in s.attributes.get("http.route", ""))
    assert turn.trace_id and turn.trace_id == format(request.context.trace_id, "032x")
    assert alpha.api(alpha.channel_key).get(f"/api/v1/turns/{turn.pk}").json()["trace_id"] == turn.trace_id
    page = alpha.dashboard("sam").get(f"/conversations/{conversation['id']}/")
    assert turn.trace_id in page.content.decode()


def test_without_an_endpoint_setup_installs_nothing(monkeypatch):
    """Issue 21 (traces), P1, P3: with no OTEL_EXPORTER_OTLP_ENDPOINT nothing is installed — no
    provider, no instrumentation, no middleware — and every hook is a no-op."""
    import httpx
    from opentelemetry import trace

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    tracing.shutdown()
    plain_send = httpx.HTTPTransport.handle_request
    assert tracing.setup(service="asixto-web") is False
    assert not tracing.enabled() and tracing.current_trace_id() is None
    assert not any("opentelemetry" in entry for entry in django_settings.MIDDLEWARE)
    assert httpx.HTTPTransport.handle_request is plain_send
    assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"
    with tracing.span("routing", **{"asixto.routing.tools": 3}) as span:
        assert span is None


def collector(received):
    """An OTLP/HTTP collector on loopback: keeps each export request it gets (path, body)."""

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        received.append((scope["path"], await request_body(receive)))
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/x-protobuf")]})
        await send({"type": "http.response.body", "body": b""})

    return app


def test_with_an_endpoint_spans_reach_the_collector_over_otlp_under_the_service_name(monkeypatch):
    """Issue 21 (traces): OTEL_EXPORTER_OTLP_ENDPOINT turns tracing on: spans go in batches over
    OTLP/HTTP (protobuf) to `<endpoint>/v1/traces`, cleaned, under `asixto-web`/`asixto-worker`
    or OTEL_SERVICE_NAME; shutting down removes the instrumentations again."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    received = []
    tracing.shutdown()
    monkeypatch.setenv("OTEL_SERVICE_NAME", "asixto-eu-worker")
    with serve_asgi(collector(received)) as url:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
        try:
            assert tracing.setup(service="asixto-worker") is True
            assert any("opentelemetry" in entry for entry in django_settings.MIDDLEWARE)
            with tracing.span("routing", **{"asixto.routing.tools": 3, "url.full": "http://m.example/v1?key=sk-live-1"}):
                trace_id = tracing.current_trace_id()
            tracing.flush()
        finally:
            tracing.shutdown()
    assert not tracing.enabled() and not any("opentelemetry" in entry for entry in django_settings.MIDDLEWARE)
    (path, body), = received
    exported = ExportTraceServiceRequest.FromString(body).resource_spans[0]
    service = {a.key: a.value.string_value for a in exported.resource.attributes}["service.name"]
    (span,) = exported.scope_spans[0].spans
    attributes = {a.key: a.value for a in span.attributes}
    assert (path, service, span.name, span.trace_id.hex()) == ("/v1/traces", "asixto-eu-worker", "routing", trace_id)
    assert attributes["asixto.routing.tools"].int_value == 3 and attributes["url.full"].string_value == "http://m.example/v1"


def headers_seen(app, seen):
    """`app`, keeping the headers of each HTTP request it gets (lower-case names) in `seen`."""

    async def recorded(scope, receive, send):
        if scope["type"] == "http":
            seen.append({name.decode().lower(): value.decode() for name, value in scope["headers"]})
        await app(scope, receive, send)

    return recorded


def traced_turn(world, spans, seen_by_model, seen_by_server, script):
    """A turn run here with tracing on, against a scripted model and the example MCP server on
    loopback that keep the headers of each request they get; returns the turn and its finished spans."""
    model = ScriptedModel(script)
    with serve_asgi(headers_seen(build_app(), seen_by_server)) as tool_url, \
            serve_asgi(headers_seen(model.app(), seen_by_model)) as model_url, agent(world, f"{model_url}/v1"):
        soporte_with_secret(world, tool_url)
        seen_by_server.clear()  # the sync's requests
        client = world.api(world.channel_key)
        conversation = client.post("/api/v1/conversations", "{}", content_type="application/json").json()
        posted = client.post(conversation["messages_url"], json.dumps({"text": TEXT}), content_type="application/json")
        turn = run(world, Turn(pk=posted.json()["id"]))
    assert turn.status == Turn.Status.DONE and turn.reply.text == "Sí, hay routers.", turn.error_detail
    return turn, spans.get_finished_spans()


@pytest.mark.parametrize("sampler", ["always_off", "always_on"])
def test_sampling_is_the_operators_and_a_turn_left_out_runs_whole_untraced(alpha, monkeypatch, sampler):
    """Issue 21 (traces), P1, P3: the operator samples with the SDK's OTEL_TRACES_SAMPLER. A turn the
    sampler leaves out runs whole and is recorded, yet no span of it is exported, its model and
    tool requests carry no trace context (no span of ours is started for them: its work would be
    thrown away) and it stores no trace id (nobody could find that trace). Sampled, the same turn
    is traced: its spans exported, its requests carrying the context, its id stored."""
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", sampler)
    seen_by_model, seen_by_server = [], []
    with tracing_to_memory() as exporter:
        turn, finished = traced_turn(alpha, exporter, seen_by_model, seen_by_server,
                                     [call(SEARCH, ARGUMENTS), say("ok"), say("Sí, hay routers.")])
    with alpha.schema():
        assert list(ToolCall.objects.values_list("outcome", flat=True)) == ["ok"]
    tool_posts = [headers for headers in seen_by_server if headers.get("mcp-method") == "tools/call"]
    assert len(tool_posts) == 1 and len(seen_by_model) >= 2
    if sampler == "always_off":
        assert list(finished) == []
        assert turn.trace_id is None
        assert not any("traceparent" in headers for headers in [*tool_posts, *seen_by_model])
    else:
        assert {"turn", "tool.call", "model.request"} <= {span.name for span in finished}
        request = next(s for s in finished if s.kind.name == "SERVER" and "messages" in s.attributes.get("http.route", ""))
        assert turn.trace_id == format(request.context.trace_id, "032x")
        assert all("traceparent" in headers for headers in [*tool_posts, *seen_by_model])


def test_the_model_server_and_the_mcp_server_get_the_turns_trace_context_from_a_span_of_ours(alpha, spans):
    """Issue 21 (traces, its cost): the model client's and the gateway's requests are traced by a
    CLIENT span of our own, not the httpx instrumentation's (which parsed the URL and every header
    again on each request): the model server and the MCP server, real ones on loopback, each get a
    `traceparent` of the turn's trace whose parent is that span, under `model.request` or
    `tool.call`; the span names the method, server, URL and status, and no header."""
    seen_by_model, seen_by_server = [], []
    turn, finished = traced_turn(alpha, spans, seen_by_model, seen_by_server,
                                 [call(SEARCH, ARGUMENTS), say("ok"), say("Sí, hay routers.")])
    by_id = {format(span.context.span_id, "016x"): span for span in finished}
    (turn_span,) = named(finished, "turn")  # run here, it starts the trace (a worker continues the request's)
    tool_posts = [headers for headers in seen_by_server if headers.get("mcp-method") == "tools/call"]
    assert len(tool_posts) == 1 and len(seen_by_model) >= 2
    for headers, under in [(tool_posts[0], "tool.call"), *((headers, "model.request") for headers in seen_by_model)]:
        version, trace_id, parent_id, flags = headers["traceparent"].split("-")
        assert (version, trace_id) == ("00", format(turn_span.context.trace_id, "032x")) and int(flags, 16) & 1
        sent = by_id[parent_id]  # the span that sent it, exported with the turn's
        assert (sent.name, sent.kind.name, sent.instrumentation_scope.name) == ("POST", "CLIENT", "asixto")
        assert parent_of(sent, finished).name == under and turn_span in ancestors(sent, finished)
        host, port = headers["host"].split(":")
        assert {key: sent.attributes[key] for key in ("http.request.method", "server.address", "server.port",
                                                      "http.response.status_code")} == {
            "http.request.method": "POST", "server.address": host, "server.port": int(port), "http.response.status_code": 200}
        assert sent.attributes["url.full"].startswith(f"http://{headers['host']}/")
        assert not any(key.startswith("http.request.header") or key.startswith("http.response.header")
                       for key in sent.attributes)
        assert sent.attributes[tracing.TURN] == str(turn.pk)
    # One client span per request: the httpx instrumentation saw none of them. No SQL spans by default.
    requests = [s for s in finished if s.kind.name == "CLIENT"]
    assert len(requests) == 1 + len(seen_by_model) and all(s.name == "POST" for s in requests)
    assert all(s.instrumentation_scope.name == "asixto" for s in requests)


def test_with_trace_sql_a_turns_statements_are_spans_of_its_trace_without_their_values(alpha, spans_with_sql):
    """Issue 21 (traces): with ASIXTO_TRACE_SQL=1 the ORM's statements, which the psycopg
    instrumentation never saw (Django replaces its cursor class,
    open-telemetry/opentelemetry-python-contrib#1774), are spans of the turn's trace under the span
    that ran them: db.system, db.operation and the statement with its placeholders; no parameter,
    so none of the values the turn stored (the customer's text, the reply, the tool's arguments)
    nor a secret it read; and no statement outside a trace makes one of its own."""
    _turn, finished = traced_turn(alpha, spans_with_sql, [], [], [call(SEARCH, ARGUMENTS), say("ok"), say("Sí, hay routers.")])
    statements = [s for s in finished if "db.system" in s.attributes]
    (turn_span,) = named(finished, "turn")
    in_turn = [s for s in statements if turn_span in ancestors(s, finished)]
    assert len(in_turn) >= 5 and {s.context.trace_id for s in in_turn} == {turn_span.context.trace_id}
    assert all(s.parent is not None for s in statements), "no statement outside a trace makes one of its own"
    for span in statements:
        assert span.kind.name == "CLIENT" and span.attributes["db.system"] == "postgresql"
        assert span.name == span.attributes["db.operation"]
        assert set(span.attributes) <= {"db.system", "db.operation", "db.statement", tracing.TENANT,
                                        tracing.CONVERSATION, tracing.TURN}, span.attributes
    assert any('UPDATE "runtime_turn"' in s.attributes["db.statement"] for s in in_turn)  # the reply stored
    assert any(parent_of(s, finished) is named(finished, "tool.call")[0] for s in in_turn)
    # The customer's message stored by the API request with its turn (one statement), its text a parameter.
    (stored,) = [s for s in statements if 'INSERT INTO "runtime_message"' in s.attributes["db.statement"]
                 and 'INSERT INTO "runtime_turn"' in s.attributes["db.statement"]]
    assert stored.attributes["db.operation"] == "WITH" and "(0, %s::uuid, %s::uuid, %s::varchar, %s::text" in stored.attributes["db.statement"]
    exported = everything_in(statements)
    for value in (TEXT, "Sí, hay routers.", ARGUMENTS["consulta"], "ZX-9001", MODEL_KEY, SERVER_SECRET):
        assert value not in exported, value


def test_an_unreachable_model_server_is_the_client_spans_error(alpha, spans):
    """Issue 21 (traces): a request that fails carries what failed as `error.type` (here the
    refused connection's type) and an error status, never the exception's message. Each attempt
    (the first and each one sent again, R11) is a span of its own."""
    from runtime.model_client import Endpoint, ModelError, complete
    from tests.support.model_server import dead_url

    with alpha.schema(), tracing.span("routing"), pytest.raises(ModelError):
        complete(endpoint=Endpoint(base_url=dead_url(), model="m", api_key=MODEL_KEY), messages=[])
    attempts = [s for s in spans.get_finished_spans() if s.kind.name == "CLIENT"]
    assert len(attempts) == 1 + django_settings.ASIXTO_MODEL_RETRIES
    for sent in attempts:
        assert sent.attributes["error.type"] == "ConnectError" and sent.status.status_code.name == "ERROR"
        assert "http.response.status_code" not in sent.attributes and not sent.status.description


def test_other_outbound_clients_keep_the_httpx_instrumentation(spans):
    """Issue 21 (traces): only the model client and the gateway trace their requests themselves;
    any other client (webhooks, the built-in tools' pages) is still traced by the httpx
    instrumentation, which sends the trace context too."""
    from tenants.outbound_http import outbound_client

    seen = []
    with serve_asgi(headers_seen(collector([]), seen)) as url, tracing.span("routing") as parent, \
            outbound_client(purpose="webhook") as client:
        assert client.post(f"{url}/hook", content=b"{}").status_code == 200
    (sent,) = [s for s in spans.get_finished_spans() if s.kind.name == "CLIENT"]
    assert sent.instrumentation_scope.name == "opentelemetry.instrumentation.httpx"
    assert sent.parent.span_id == parent.get_span_context().span_id
    assert seen[0]["traceparent"].split("-")[1:3] == [format(sent.context.trace_id, "032x"), format(sent.context.span_id, "016x")]


def test_a_page_a_customer_names_is_not_sent_the_turns_trace_context(alpha, spans):
    """Issue 21 (traces), issue 19 (M2): `asixto__read_page` fetches whatever address the customer or
    the model names; that host is not one of the platform's, so it gets no traceparent (it would learn
    the turn's trace id), while the tenant's search backend, a server the operator set, still does."""
    from runtime.builtins.public import _get

    seen = []
    with serve_asgi(headers_seen(collector([]), seen)) as url, tracing.span("tool.call"):
        _get(f"{url}/page", max_bytes=1000, purpose=None)
        _get(f"{url}/search", max_bytes=1000, purpose="search")
    named_page, search = seen
    assert "traceparent" not in named_page
    assert "traceparent" in search
