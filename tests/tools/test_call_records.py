"""Call records are durable (G9): a bad neighbour, the caller's rollback and concurrent calls
never cost a record; `flush()` stores at once.

The records go through the writer thread of this process, on its own database connection, so
these tests use a committed tenant and read what PostgreSQL really holds."""

import threading
import uuid

import pytest
from django.db import connection, transaction
from django_tenants.utils import tenant_context

from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.tools.gateway_support import certified_tool, context, ok_result
from tools.gateway import call_tool, flush_records, records
from tools.models import ToolCall

CEILING = 60  # seconds: generous on a loaded 2-CPU machine; only a broken writer gets near it


def stored(world, ids):
    with world.schema():
        found = {row.pk: row for row in ToolCall.objects.filter(pk__in=list(ids))}
    connection.set_schema_to_public()
    return found


def test_it_stores_every_record_of_concurrent_calls_next_to_bad_ones(committed_world, django_db_blocker):
    """G9, A4: 24 calls from 8 threads at once, a third of them with what PostgreSQL refuses
    as is (a NUL or a lone surrogate in the arguments or the conversation id, a 300-character
    tool name from a model): every call has its record, the bad parts cleaned or cut."""
    peer = FaultyPeer([ok_result()])
    # A lone surrogate cannot even be sent: it goes to a tool the model made up (never sent).
    bad = [("crm__buscar_producto", {"consulta": "a\x00b"}), ("crm__inventado", {"consulta": "roto \ud800"}),
           ("crm__buscar_producto", {"consulta": "ok", "\x00clave": 1})]
    outcomes, errors = [], []

    def one(index):
        try:
            with tenant_context(committed_world.tenant):
                if index % 3 == 0:
                    outcome = call_tool(name="crm__" + "x" * 300, arguments={"consulta": "y"}, context=context())
                elif index % 3 == 1:
                    name, arguments = bad[index % len(bad)]
                    outcome = call_tool(
                        name=name, arguments=arguments,
                        context=context(conversation_id="cnv\x00" + "9" * 200),
                    )
                else:
                    outcome = call_tool(name="crm__buscar_producto", arguments={"consulta": f"q{index}"}, context=context())
            outcomes.append(outcome)
        except Exception as exc:  # pragma: no cover - the assertion below reports it
            errors.append(exc)
        finally:
            connection.close()

    with django_db_blocker.unblock(), serve_asgi(peer.app()) as url:
        certified_tool(committed_world, url)
        connection.set_schema_to_public()
        for wave in range(3):
            threads = [threading.Thread(target=one, args=(wave * 8 + n,)) for n in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(CEILING)
        flush_records()
        rows = stored(committed_world, [outcome.record_id for outcome in outcomes])
    assert errors == [] and len(outcomes) == 24
    assert len(rows) == 24
    long_names = [row for row in rows.values() if row.tool_name.startswith("crm__xxx")]
    assert len(long_names) == 8 and all(len(row.tool_name) == 250 for row in long_names)
    cleaned = [row for row in rows.values() if row.conversation_id.startswith("cnv\ufffd")]
    assert len(cleaned) == 8 and all("\x00" not in row.conversation_id and len(row.conversation_id) <= 100 for row in cleaned)
    texts = [str(row.arguments) for row in rows.values()]
    assert not any("\x00" in text or "\ud800" in text for text in texts)
    assert any("roto \ufffd" in text for text in texts)


def test_it_keeps_the_record_when_the_callers_transaction_rolls_back(committed_world, django_db_blocker):
    """G9, A4: inside the caller's transaction a record PostgreSQL would refuse does not raise
    (nor break the transaction); after the caller rolls back, both records are still there."""
    peer = FaultyPeer([ok_result()])

    class CallerGaveUp(Exception):
        pass

    with django_db_blocker.unblock(), serve_asgi(peer.app()) as url:
        tool = certified_tool(committed_world, url)
        with committed_world.schema():
            with pytest.raises(CallerGaveUp), transaction.atomic():
                good = call_tool(name=tool.prefixed_name, arguments={"consulta": "router"}, context=context())
                bad = call_tool(name=tool.prefixed_name, arguments={"consulta": "a\x00b"}, context=context())
                # The caller's transaction still works after the call.
                assert ToolCall.objects.filter(pk=good.record_id).exists()
                raise CallerGaveUp
        connection.set_schema_to_public()
        rows = stored(committed_world, [good.record_id, bad.record_id])
    # A NUL is no argument a server can take: refused before sending, and recorded all the same.
    assert (good.outcome, bad.outcome) == ("ok", "invalid_arguments") and len(peer.calls) == 1
    assert set(rows) == {good.record_id, bad.record_id}
    assert rows[bad.record_id].arguments == {"consulta": "a\ufffdb"}


def test_it_stores_at_once_when_flushed_without_waiting_for_the_batch_window(committed_world, django_db_blocker, monkeypatch):
    """G9: flush() stores what is pending now; it does not wait out the writer's batch window
    (made an hour long here, so a flush that waits for it never returns within the ceiling)."""
    monkeypatch.setattr(records, "LINGER_SECONDS", 3600)
    with django_db_blocker.unblock():
        certified_tool(committed_world, "http://127.0.0.1:9")
        with committed_world.schema():
            outcome = call_tool(name="crm__missing", arguments={}, context=context())
        connection.set_schema_to_public()
        flushed = threading.Event()

        def flush():
            flush_records()
            flushed.set()

        threading.Thread(target=flush, daemon=True).start()
        assert flushed.wait(CEILING), "flush() waited for the batch window"
        assert set(stored(committed_world, [outcome.record_id])) == {outcome.record_id}


def test_it_stores_a_record_with_unstorable_values_of_every_kind(committed_world, django_db_blocker):
    """G9, A4: values no column takes as they are — NaN, nesting deeper than the JSON encoder
    goes, a non-JSON object, an HTTP status beyond smallint, an over-long error with a NUL —
    become storable values; the record and its neighbour in the batch are both kept."""
    deep: dict = {}
    node = deep
    for _ in range(5000):
        node["n"] = {}
        node = node["n"]
    values = {
        "tool_id": None, "tool_name": "crm__raro", "source": "turn", "turn_id": None, "conversation_id": "c",
        "channel": "chat", "idempotency_key": "k" * 500, "request_ids": ["req_\x00"], "attempts": 1,
        "duration_ms": 1.0, "outcome": "ok", "http_status": 70000, "error": "boom\x00" * 10000,
        "arguments": {"nan": float("nan"), "deep": deep, "obj": object()}, "result_chars": 1, "model_chars": 1,
        "truncated": False, "violations": [{"kind": "leak:token", "detail": "\udfff"}],
    }
    from django.utils import timezone

    with django_db_blocker.unblock():
        with committed_world.schema():
            odd, fine = uuid.uuid4(), uuid.uuid4()
            records.submit({**values, "id": odd, "started_at": timezone.now()})
            records.submit({**values, "id": fine, "started_at": timezone.now(), "arguments": {}, "error": "",
                            "http_status": 200, "idempotency_key": "k", "request_ids": [], "violations": []})
        connection.set_schema_to_public()
        flush_records()
        rows = stored(committed_world, [odd, fine])
    assert set(rows) == {odd, fine}
    row = rows[odd]
    assert row.http_status is None and len(row.idempotency_key) == 200
    assert "\x00" not in row.error and len(row.error) <= records.MAX_TEXT_CHARS
    assert row.arguments["nan"] is None and isinstance(row.arguments["obj"], str)
    assert row.request_ids == ["req_\ufffd"] and row.violations[0]["detail"] == "\ufffd"


def test_a_batch_that_postgresql_refuses_still_stores_every_good_record(committed_world, django_db_blocker, monkeypatch):
    """G9: records nothing can make storable — a tenant whose schema is gone, an id stored
    already — fail their batch; the writer then stores the batch record by record, so their
    neighbours (here, of two tenants) are all kept."""
    from django.utils import timezone
    from django_tenants.utils import schema_context

    monkeypatch.setattr(records, "LINGER_SECONDS", 3600)  # one batch: everything below, then flush

    def values(**changes):
        return {"id": uuid.uuid4(), "tool_name": "crm__x", "channel": "chat", "idempotency_key": "k", "outcome": "ok",
                "started_at": timezone.now(), **changes}

    with django_db_blocker.unblock():
        first, duplicate, last = values(), values(), values()
        with committed_world.schema():
            records.submit(duplicate)
        flush_records()
        with committed_world.schema():
            records.submit(first)
            records.submit(dict(duplicate, tool_name="crm__again"))
        with schema_context("tenant_that_was_dropped"):
            records.submit(values())
        with schema_context("public"):
            records.submit(values())  # the public schema has no call records either
        with committed_world.schema():
            records.submit(last)
        connection.set_schema_to_public()
        flush_records()
        rows = stored(committed_world, [first["id"], duplicate["id"], last["id"]])
    assert set(rows) == {first["id"], duplicate["id"], last["id"]}
    assert rows[duplicate["id"]].tool_name == "crm__x"


def test_records_of_several_tenants_in_one_batch_each_land_in_their_own_schema(committed_world, django_db_blocker, monkeypatch, caplog):
    """G9, T1: one batch with calls of two tenants (as on a worker serving many companies):
    every record is stored, each in its own tenant's schema and only there, by the batch
    itself (not by the record-by-record fallback)."""
    from tenants.models import Tenant
    from tests.conftest import build_world

    monkeypatch.setattr(records, "LINGER_SECONDS", 3600)  # everything below in one batch
    with django_db_blocker.unblock():
        other = build_world(f"c{uuid.uuid4().hex[:10]}")
        try:
            made = {committed_world.tenant.schema_name: [], other.tenant.schema_name: []}
            for index in range(12):
                world = (committed_world, other)[index % 2]
                with world.schema():
                    outcome = call_tool(name=f"crm__nada_{index}", arguments={"n": index}, context=context())
                made[world.tenant.schema_name].append(outcome.record_id)
            connection.set_schema_to_public()
            flush_records()
            found = {world.tenant.schema_name: set(stored(world, [pk for ids in made.values() for pk in ids]))
                     for world in (committed_world, other)}
        finally:
            connection.set_schema_to_public()
            Tenant.objects.get(pk=other.tenant.pk).delete(force_drop=True)
    assert found == {schema: set(ids) for schema, ids in made.items()}
    assert all(len(ids) == 6 for ids in found.values())
    assert "one by one" not in caplog.text


def test_records_stored_one_by_one_for_alternating_tenants_each_land_in_their_own_schema(
        committed_world, committed_other, django_db_blocker, caplog):
    """G9, T1, P1 (issue 22): a turn's record flushed after each call and a console call's record
    stored on the caller's own connection, tenants alternating (one statement text for every
    schema, the schema set for that statement alone): each record is in its own tenant's schema
    and only there (by those statements, not by a fallback), and neither connection's schema is
    changed for what runs after."""

    def search_path():
        with connection.cursor() as cursor:
            cursor.execute("SHOW search_path")
            return cursor.fetchone()[0]

    worlds = (committed_world, committed_other)
    made = {world.tenant.schema_name: [] for world in worlds}
    seen_after = []
    with django_db_blocker.unblock():
        connection.set_schema_to_public()
        public_path = search_path()
        for index in range(8):
            world = worlds[index % 2]
            source = ToolCall.Source.CONSOLE if index % 4 >= 2 else ToolCall.Source.TURN
            with world.schema():
                outcome = call_tool(name="crm__nada", arguments={"n": index}, context=context(source=source))
                flush_records()
                # The caller's next query runs in its tenant's schema, and finds the record there.
                seen_after.append((search_path(), ToolCall.objects.filter(pk=outcome.record_id).exists()))
            made[world.tenant.schema_name].append(outcome.record_id)
        connection.set_schema_to_public()
        after = search_path()
        everything = [pk for ids in made.values() for pk in ids]
        found = {world.tenant.schema_name: set(stored(world, everything)) for world in worlds}
    assert found == {schema: set(ids) for schema, ids in made.items()}
    assert [len(ids) for ids in found.values()] == [4, 4]
    assert [found_it for _path, found_it in seen_after] == [True] * 8
    assert all(path.startswith(worlds[index % 2].tenant.schema_name) for index, (path, _found) in enumerate(seen_after))
    assert after == public_path
    assert "left to the writer" not in caplog.text and "one by one" not in caplog.text


def test_moves_of_several_tenants_are_prepared_once_per_session_and_survive_lost_statements(committed_world, django_db_blocker, caplog):
    """P1, G9, T1: the records of a batch of several tenants leave the staging table by one
    statement per tenant, prepared once per database session; later batches reuse them. A session that lost them (DEALLOCATE ALL) still stores the
    next batch whole, by the batch (not record by record), each record in its own schema."""
    from django.utils import timezone

    from tenants.models import Tenant
    from tests.conftest import build_world

    def values():
        return {"id": uuid.uuid4(), "tool_name": "crm__x", "channel": "chat", "idempotency_key": "k", "outcome": "ok",
                "started_at": timezone.now()}

    def prepared_moves():
        with connection.cursor() as cursor:
            cursor.execute("SELECT name FROM pg_prepared_statements WHERE name LIKE 'asixto_move_records_%%'")
            return sorted(row[0] for row in cursor.fetchall())

    with django_db_blocker.unblock():
        other = build_world(f"c{uuid.uuid4().hex[:10]}")
        worlds = (committed_world, other)
        try:
            made = {world.tenant.schema_name: [] for world in worlds}

            def batch():
                # On this thread's own connection, as the writer does on its own.
                items = [(world.tenant.schema_name, values()) for world in worlds for _ in range(2)]
                for schema, record in items:
                    made[schema].append(record["id"])
                records._store(items)

            connection.set_schema_to_public()
            batch()
            first = prepared_moves()
            batch()
            again = prepared_moves()
            with connection.cursor() as cursor:
                cursor.execute("DEALLOCATE ALL")
            batch()
            found = {world.tenant.schema_name: set(stored(world, [pk for ids in made.values() for pk in ids])) for world in worlds}
        finally:
            connection.set_schema_to_public()
            Tenant.objects.get(pk=other.tenant.pk).delete(force_drop=True)
    assert len(first) == 2 and again == first
    assert found == {schema: set(ids) for schema, ids in made.items()}
    assert all(len(ids) == 6 for ids in found.values())
    assert "one by one" not in caplog.text


def test_a_recorded_result_is_stored_from_the_json_text_it_was_measured_by():
    """P1, G9: the gateway encodes a result once, to measure it for the record; the writer
    stores that text rather than encoding the result again. A result that text cannot be
    stored as (a NUL, a lone surrogate, NaN, an object JSON cannot encode) is stored exactly
    as before, cleaned; a result too long for the record is still cut."""
    import json

    from tools.gateway.call import RECORD_RESULT_CHARS, bounded_result

    result = {"productos": [{"nombre": "Router WiFi 6 doble banda", "precio": "$ 189.900"}], "total": 1, "ñ": None}
    kept = bounded_result(result)
    assert records.storable_json(kept) is kept.text and json.loads(kept.text) == result
    for odd in ({"a": "x\x00y"}, {"b": "\ud800"}, {"n": float("nan")}, {"o": object()}, {"deep": [[[[]]]]}):
        assert records.storable_json(bounded_result(odd)) == records.storable_json(odd)
    cut = bounded_result({"t": "x" * (RECORD_RESULT_CHARS + 10)})
    assert set(cut) == {"cut_at_chars", "json_start"} and len(cut["json_start"]) == RECORD_RESULT_CHARS
