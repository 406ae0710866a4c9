"""One deadline per call, not per read (G3), on every path: the direct POST (JSON or an event
stream), the SDK's streamable HTTP and HTTP+SSE transports, and stdio through the SDK.

Each server keeps its answer coming a little at a time (keep-alive comments or notifications every
0.3 s for 12 s, six times the 2 s deadline) and only then ends it: a read timeout alone never
fires. The call must end as a `timeout` after one attempt, and the model must be told the tool
did not answer. Wall-clock is asserted only as a generous ceiling (10x the deadline), except where
a mutant would only show in how long the call took (issue 19): there the call must end by its
deadline plus a third of it, which any attempt given a deadline of its own would overrun."""

import sys
from pathlib import Path

import pytest
from django.db import connection

from tenants.models import ApprovedCommand
from tests.support.faults import MODERN_DISCOVER, FaultyPeer
from tests.support.hostile_peers import HeaderTricklingPeer, TricklingPeer
from tests.support.mcp_apps import sse_app, streamable_app
from tests.support.mcp_servers import serve_asgi
from tests.support.slow_tool import build_slow_server
from tests.tools.gateway_support import certified_tool, context
from tools.gateway import call_tool
from tools.models import ToolCall

DEADLINE = 2.0
CEILING = 10 * DEADLINE
TRICKLE = (0.3, 12.0)
SCRIPT = str(Path(__file__).resolve().parents[1] / "support" / "slow_tool.py")


def call(world):
    with world.schema():
        return call_tool(name="crm__buscar_producto", arguments={"consulta": "router"}, context=context())


def assert_timed_out(world, outcome):
    # The trickle lasts TRICKLE[1] s, far past the deadline: without one total deadline the call
    # would end when the stream does, as `dropped`, and be retried. A single `timeout` attempt is
    # the proof; how long it took is a figure for bench/, not a test on a shared machine.
    assert (outcome.outcome, outcome.attempts) == ("timeout", 1), (outcome.outcome, outcome.error)
    assert "no respondió a tiempo" in outcome.model_text and "no lo inventes" in outcome.model_text
    with world.schema():
        record = ToolCall.objects.get(pk=outcome.record_id)
    assert (record.outcome, record.attempts) == ("timeout", 1)
    assert record.error_code in ("timeout", "process_timeout")  # the latter says the child was stopped


@pytest.mark.parametrize("notifications", [False, True], ids=["keep-alive-comments", "notifications"])
def test_it_ends_a_direct_call_whose_event_stream_trickles_at_the_deadline(alpha, notifications):
    """G3: an event stream that stays alive but never answers is one timeout, not a call held
    open for as long as the server likes, and its end is not retried as a dropped connection."""
    peer = TricklingPeer(*TRICKLE, notifications=notifications)
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url, timeout=DEADLINE)
        outcome = call(alpha)
    assert_timed_out(alpha, outcome)
    assert len(peer.calls) == 1


def test_it_ends_a_direct_call_whose_server_trickles_its_header_bytes_at_the_deadline(alpha):
    """G3: a server that sends its response head one byte at a time, each well within a read
    timeout, never completes it: the call is one timeout (every socket wait gets only what is
    left of the call's deadline), and the connection is closed long before the trickle ends."""
    trickle = HeaderTricklingPeer(interval=0.05, count=int(CEILING / 0.05))
    with trickle as url:
        certified_tool(alpha, url, timeout=DEADLINE)
        outcome = call(alpha)
        assert trickle.closed.wait(CEILING)
        assert not trickle.finished.is_set()
    assert_timed_out(alpha, outcome)
    assert trickle.requests == 1


def test_a_retry_gets_only_what_is_left_of_the_calls_deadline(alpha):
    """G3: the deadline is the call's, not each attempt's. The first attempt is dropped after half the
    deadline, the retry's server never answers: the retry is cut at the call's deadline, so it lasts less
    than the first attempt (with a deadline of its own it would last the whole deadline, twice as long)."""
    deadline = 6.0
    peer = FaultyPeer()
    peer.drop_first, peer.delays = 1, [deadline / 2, 4 * deadline]
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url, timeout=deadline)
        outcome = call(alpha)
    assert (outcome.outcome, outcome.attempts, len(peer.calls)) == ("timeout", 2, 2), (outcome.outcome, outcome.error)
    first, retry = outcome.attempt_ms
    assert first >= deadline / 2 * 1000 and retry < first, outcome.attempt_ms



def assert_ended_by_the_deadline(outcome, deadline):
    """The call, retries and all, ended by its deadline plus a third of it: room for a loaded
    machine, and less than what any attempt given a deadline of its own would add (issue 19)."""
    assert outcome.duration_ms <= deadline * 4 / 3 * 1000, (outcome.duration_ms, outcome.attempt_ms)


def test_retries_never_take_a_call_past_its_deadline(alpha):
    """G3, issue 19 (mutant: a fresh deadline per direct attempt). The server answers slowly and
    drops two attempts after three tenths of the deadline each, and never answers the third: the
    third attempt gets only what is left, so the call ends as one timeout by its deadline. Given a
    deadline of its own, the third attempt would run from about 0.6 of the deadline to 1.6 of it."""
    deadline = 6.0
    peer = FaultyPeer()
    peer.drop_first, peer.delays = 2, [0.3 * deadline, 0.3 * deadline, 10 * deadline]
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url, timeout=deadline)
        outcome = call(alpha)
    assert (outcome.outcome, outcome.attempts, len(peer.calls)) == ("timeout", 3, 3), (outcome.outcome, outcome.error)
    assert_ended_by_the_deadline(outcome, deadline)


def test_a_socket_wait_gets_only_what_is_left_of_the_deadline(alpha):
    """G3, issue 19 (mutant: socket waits not clamped to the time left). The server sends its
    response head a byte every 0.6 of the deadline, never finishing it: the wait for the second byte
    starts with 0.4 of the deadline left and must end there, not wait the read timeout the request
    started with (the whole deadline), which each byte would start again until the server stops."""
    deadline = 3.0
    trickle = HeaderTricklingPeer(interval=0.6 * deadline, count=5)
    with trickle as url:
        certified_tool(alpha, url, timeout=deadline)
        outcome = call(alpha)
        assert_ended_by_the_deadline(outcome, deadline)
        assert trickle.closed.wait(CEILING) and not trickle.finished.is_set()
    assert_timed_out(alpha, outcome)


def test_it_ends_a_call_through_the_sdks_streamable_http_at_the_deadline(alpha):
    """G3: a server never probed goes through the SDK (discover, then the call); its tool sends a
    notification on the response stream every 0.3 s: one timeout within the call's deadline."""
    with serve_asgi(streamable_app(build_slow_server(trickle=TRICKLE), json_response=False)) as url:
        certified_tool(alpha, url, timeout=DEADLINE, discover=None)
        outcome = call(alpha)
    assert_timed_out(alpha, outcome)


def test_it_ends_a_call_over_http_and_sse_at_the_deadline(alpha):
    """G3: the deprecated HTTP+SSE transport: the event stream stays busy with notifications."""
    with serve_asgi(sse_app(build_slow_server(trickle=TRICKLE))) as url:
        certified_tool(alpha, url, timeout=DEADLINE, transport="sse", path="/sse", discover=MODERN_DISCOVER)
        outcome = call(alpha)
    assert_timed_out(alpha, outcome)


def test_it_ends_a_call_to_a_stdio_server_at_the_deadline(alpha):
    """G3, M3: a stdio server whose tool keeps writing notifications is stopped at the deadline."""
    connection.set_schema_to_public()
    ApprovedCommand.objects.create(
        slug="lento", executable=sys.executable, base_args=[SCRIPT, "--trickle", "0.3", "--for", "12"]
    )
    certified_tool(alpha, None, timeout=DEADLINE, transport="stdio", command="lento", discover=MODERN_DISCOVER)
    outcome = call(alpha)
    assert_timed_out(alpha, outcome)


def test_a_short_trickle_that_ends_without_an_answer_is_a_dropped_connection_retried(alpha):
    """G3: a stream that ends early without the response lost the request: it is retried (new
    request id, same idempotency key) within the same deadline, and never past it."""
    peer = TricklingPeer(0.1, 0.3)
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url, timeout=DEADLINE * 3)
        outcome = call(alpha)
    assert outcome.outcome == "dropped" and outcome.attempts == 3 and len(peer.calls) == 3
    keys = {c["params"]["_meta"]["com.asixto/idempotencyKey"] for c in peer.calls}
    assert len(keys) == 1 and len({c["id"] for c in peer.calls}) == 3
