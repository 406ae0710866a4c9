"""A tool call holds no database connection while the tenant's server works (P4): a turn gives its
connection back before the call, and the gateway's tool lookup must not take one and keep it."""

from django.db import connection, connections

from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.tools.gateway_support import certified_tool, context, ok_result
from tools.gateway import call_tool, flush_records


def test_it_holds_no_connection_during_the_call_after_a_lookup_cache_miss(committed_world, django_db_blocker):
    """P4, M7: with no connection held before the call (as a turn leaves it), the lookup of a tool
    not yet in the cache reads the database and gives the connection back before the server is
    called; the call itself still succeeds."""
    peer = FaultyPeer([ok_result()])
    caller = connections["default"]  # this thread's connection, as the server sees it from its own thread
    held_during_call = []
    inner = peer.app()

    async def app(scope, receive, send):
        if scope["type"] == "http":
            held_during_call.append(caller.connection is not None)
        await inner(scope, receive, send)

    with django_db_blocker.unblock(), serve_asgi(app) as url:
        tool = certified_tool(committed_world, url)
        with committed_world.schema():
            assert not connection.in_atomic_block
            connection.close()  # what the turn does before a call
            outcome = call_tool(name=tool.prefixed_name, arguments={"consulta": "a"}, context=context())
            flush_records()
        connection.set_schema_to_public()
    assert outcome.outcome == "ok"
    assert held_during_call == [False]
