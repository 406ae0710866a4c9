"""Bounded result size (G3, G7, P1): the gateway reads at most ASIXTO_MAX_RESULT_BYTES from a
server per call, on the direct POST (JSON with or without Content-Length, event streams) and on
the SDK's HTTP transports; past it the call is `too_large`, never retried, and the model is told
the tool could not be used. Memory is measured with tracemalloc (allocations, not time)."""

import tracemalloc

import pytest

from tests.support.faults import MODERN_DISCOVER
from tests.support.hostile_peers import LargePeer
from tests.support.mcp_apps import sse_app, streamable_app
from tests.support.mcp_servers import serve_asgi
from tests.support.slow_tool import build_slow_server
from tests.tools.gateway_support import certified_tool, context
from tools.gateway import call_tool
from tools.models import ToolCall

LIMIT = 1024 * 1024


@pytest.fixture(autouse=True)
def limit(settings):
    settings.ASIXTO_MAX_RESULT_BYTES = LIMIT


def call(world):
    with world.schema():
        return call_tool(name="crm__buscar_producto", arguments={"consulta": "router"}, context=context())


def assert_too_large(world, outcome):
    assert (outcome.outcome, outcome.attempts) == ("too_large", 1), (outcome.outcome, outcome.error)
    # Its own sentence (translated with the next catalog update), naming the tool, without the data.
    assert "x" * 100 not in outcome.model_text and "crm__buscar_producto" in outcome.model_text
    with world.schema():
        record = ToolCall.objects.get(pk=outcome.record_id)
    assert (record.outcome, record.error_code, record.error_params["limit"]) == ("too_large", "too_large", LIMIT)


@pytest.mark.parametrize(
    ("event_stream", "announce_length"),
    [(False, True), (False, False), (True, False)],
    ids=["json-with-length", "json-chunked", "event-stream"],
)
def test_it_stops_reading_a_direct_answer_past_the_limit(alpha, event_stream, announce_length):
    """G3: 3 MB from the server is `too_large` after one attempt, whatever its framing."""
    peer = LargePeer(3 * LIMIT, event_stream=event_stream, announce_length=announce_length)
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url)
        outcome = call(alpha)
    assert_too_large(alpha, outcome)
    assert len(peer.calls) == 1


def test_it_reads_an_answer_just_under_the_limit(alpha):
    """G3: the limit is on bytes read, not a guess: 0.9 MiB goes through (cut for the model, G7)."""
    peer = LargePeer(int(0.9 * LIMIT), announce_length=False)
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url)
        outcome = call(alpha)
    assert outcome.ok and outcome.truncated and outcome.result_chars > 900_000


def test_a_huge_answer_costs_the_caller_little_memory(alpha):
    """P1: a 40 MB answer without Content-Length peaks at a few MiB of allocations in this
    process (the peer streams it from one reused chunk), not at several copies of it."""
    peer = LargePeer(40 * LIMIT, announce_length=False)
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url)
        tracemalloc.start()
        try:
            outcome = call(alpha)
            _current, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert outcome.outcome == "too_large"
    assert peak < 8 * LIMIT, f"peak {peak / LIMIT:.1f} MiB"


@pytest.mark.parametrize("transport", ["streamable_http", "sse"])
def test_it_stops_reading_an_sdk_answer_past_the_limit(alpha, transport):
    """G3: through the SDK (a server never probed, or HTTP+SSE) the same limit holds."""
    server = build_slow_server(result_bytes=3 * LIMIT)
    app = sse_app(server) if transport == "sse" else streamable_app(server)
    with serve_asgi(app) as url:
        certified_tool(
            alpha, url, transport=transport, path="/sse" if transport == "sse" else "/mcp",
            discover=MODERN_DISCOVER if transport == "sse" else None, timeout=10.0,
        )
        outcome = call(alpha)
    assert_too_large(alpha, outcome)
