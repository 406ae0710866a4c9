"""Outside a transaction (as on a worker), the gateway caches tool lookups and writes call
records in batches; neither may cost correctness (M7, C, G9)."""

import contextlib
import json
import subprocess
import sys
import time

from django.db import connection

from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.tools.gateway_support import certified_tool, context, ok_result
from tools.gateway import call_tool, flush_records
from tools.models import Tool, ToolCall
from tools.services import tool_set_enabled


def test_it_sees_a_disabled_tool_at_once_and_stores_every_record(committed_world, django_db_blocker):
    """C, G9: a tool disabled between two calls is refused on the next call (the lookup cache is
    invalidated); after flush, every call has its record with the right outcome."""
    peer = FaultyPeer([ok_result()])
    with django_db_blocker.unblock(), serve_asgi(peer.app()) as url:
        tool = certified_tool(committed_world, url)
        with committed_world.schema():
            assert not connection.in_atomic_block
            first = call_tool(name=tool.prefixed_name, arguments={"consulta": "a"}, context=context())
            second = call_tool(name=tool.prefixed_name, arguments={"consulta": "b"}, context=context())
            tool_set_enabled(tool=Tool.objects.get(pk=tool.pk), enabled=False)
            third = call_tool(name=tool.prefixed_name, arguments={"consulta": "c"}, context=context())
            flush_records()
            stored = dict(ToolCall.objects.values_list("id", "outcome"))
        connection.set_schema_to_public()
    assert (first.outcome, second.outcome, third.outcome) == ("ok", "ok", "unavailable")
    assert len(peer.calls) == 2
    assert stored == {first.record_id: "ok", second.record_id: "ok", third.record_id: "unavailable"}


@contextlib.contextmanager
def catalog_reader(schema):
    """Another process looking tools up through its own lookup cache (tests/support/catalog_reader.py):
    yields `ask(line)`, which sends one line and returns the JSON line it answers."""
    from tests.tools.test_call_records_exit import CEILING, ROOT, child_environment

    reader = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "support" / "catalog_reader.py"), schema],
        env=child_environment(), cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )

    def ask(line):
        reader.stdin.write(line + "\n")
        reader.stdin.flush()
        return json.loads(reader.stdout.readline())

    try:
        yield ask
    finally:
        reader.stdin.close()
        reader.wait(CEILING)


def test_another_process_sees_a_change_after_the_generation_bump(committed_world, django_db_blocker):
    """C, M7: a worker process that has the tool in its lookup cache sees it disabled once this
    process changes it: the cache re-reads the tenant's catalog generation in Redis."""
    from tests.tools.test_call_records_exit import CEILING

    with django_db_blocker.unblock():
        tool = certified_tool(committed_world, "http://127.0.0.1:9")
        connection.set_schema_to_public()
        with catalog_reader(committed_world.tenant.schema_name) as ask:

            def seen_available():
                return ask(tool.prefixed_name)["available"]

            assert seen_available() is True and seen_available() is True  # now in its cache
            with committed_world.schema():
                tool_set_enabled(tool=Tool.objects.get(pk=tool.pk), enabled=False)
            connection.set_schema_to_public()
            deadline = time.monotonic() + CEILING
            while seen_available() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert seen_available() is False, "the other process kept its cached tool"


def test_a_change_reaches_a_process_that_revalidates_through_another_tenant(committed_world, committed_other, django_db_blocker):
    """C, M7, T1, P1 (issue 22): a worker re-reads the other tenants' catalog generations only
    when the platform's change token moved. A tool of tenant B disabled here is seen disabled by
    another process whose revalidation was made by a lookup of tenant A, and whose next lookup
    of B trusts what it read then (no revalidation of its own); tenant A's tool stays available."""
    with django_db_blocker.unblock():
        mine = certified_tool(committed_world, "http://127.0.0.1:9")
        theirs = certified_tool(committed_other, "http://127.0.0.1:9")
        connection.set_schema_to_public()
        with catalog_reader(committed_world.tenant.schema_name) as ask:

            def available(world, tool):
                return ask(f"{world.tenant.schema_name} {tool.prefixed_name}")["available"]

            ask("revalidate 3600")  # from here on, only what the reader read last
            assert available(committed_world, mine) and available(committed_other, theirs)  # both cached
            with committed_other.schema():
                tool_set_enabled(tool=Tool.objects.get(pk=theirs.pk), enabled=False)
            connection.set_schema_to_public()
            ask("revalidate 0")
            assert available(committed_world, mine) is True  # revalidates: the change token moved
            ask("revalidate 3600")
            assert available(committed_other, theirs) is False, "the other process kept tenant B's cached tool"
            assert available(committed_world, mine) is True
