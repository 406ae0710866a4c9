"""The call journal (G9, issue 19): every attempt sent is named in a record even when its process dies
before the record is stored. A whole worker killed mid-call is in tests/runtime/test_redelivery.py;
here, what a dead process's journal becomes, what is left alone, and a journal that stays small."""

import json
import os
import socket
import uuid
from datetime import datetime, timezone
from pathlib import Path

from django.conf import settings

from tools.gateway import flush_records, journal
from tools.models import ToolCall


def a_journal(name: str, lines: list[dict]) -> Path:
    folder = Path(settings.ASIXTO_CALL_JOURNAL_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"id": "cut sho')
    return path


def begun(record_id, schema, request_id, attempt=1, **values):
    entry = {"id": str(record_id), "schema": schema, "request_id": request_id, "attempt": attempt}
    if attempt == 1:
        entry["values"] = {"tool_id": None, "tool_name": "crm__buscar", "source": "turn", "channel": "chat",
                           "idempotency_key": "turn-9-step-2", "arguments": json.dumps({"consulta": "router"}),
                           "started_at": datetime(2026, 12, 4, 5, 0, tzinfo=timezone.utc).isoformat(), **values}
    return entry


def test_a_dead_processs_unrecorded_calls_are_recorded_as_interrupted_and_nothing_else_is(alpha):
    """G9: a dead process of this host began three calls: one recorded, one stored before it died
    (its record exists though the journal never said so), one never recorded, with two attempts.
    Only that one is recorded, as interrupted, with both request ids; the journal goes. A live
    process's journal and another host's are left alone."""
    schema = alpha.tenant.schema_name
    recorded, stored_unsaid, lost = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with alpha.schema():
        ToolCall.objects.create(id=stored_unsaid, tool_name="crm__buscar", outcome="ok", started_at=datetime.now(timezone.utc))
    host = socket.gethostname()
    dead = a_journal(f"{host}--999999--1.jsonl", [
        begun(recorded, schema, "req_a"), {"stored": [str(recorded)]}, begun(stored_unsaid, schema, "req_b"),
        begun(lost, schema, "req_c1"), begun(lost, schema, "req_c2", attempt=2),
        begun(uuid.uuid4(), "no_such_schema", "req_d"),
    ])
    me = os.getpid()
    # (a name of this live process's, not its own journal: that one is in use)
    alive = a_journal(f"{host}--{me}--{journal._start_ticks(me)}.rotated.jsonl", [begun(uuid.uuid4(), schema, "req_e")])
    elsewhere = a_journal("another-host--999999--1.jsonl", [begun(uuid.uuid4(), schema, "req_f")])
    try:
        assert journal.recover() == 1
        flush_records()
        with alpha.schema():
            row = ToolCall.objects.get(pk=lost)
            assert not ToolCall.objects.filter(pk=recorded).exists()
            assert ToolCall.objects.filter(request_ids__contains=["req_e"]).count() == 0
        assert (row.outcome, row.request_ids, row.attempts) == ("interrupted", ["req_c1", "req_c2"], 2)
        assert (row.tool_name, row.idempotency_key, row.arguments) == ("crm__buscar", "turn-9-step-2", {"consulta": "router"})
        assert not dead.exists() and alive.exists() and elsewhere.exists()
    finally:
        for path in (dead, alive, elsewhere):
            path.unlink(missing_ok=True)


def test_the_journal_keeps_only_the_calls_still_open(monkeypatch):
    """Issue 19: past its size the journal starts again from the calls not yet stored, so it never grows
    with the calls a long-lived worker makes; the old file goes."""
    monkeypatch.setattr(journal, "JOURNAL_MAX_BYTES", 2000)
    ids = [uuid.uuid4() for _n in range(40)]
    for n, record_id in enumerate(ids):
        journal.sending(record_id=record_id, schema="alpha", request_id=f"req_{n}", attempt=1,
                        values={"tool_name": "crm__buscar", "arguments": {"n": n}})
        if n != 7:
            journal.stored([record_id])
    journal.sending(record_id=uuid.uuid4(), schema="alpha", request_id="req_last", attempt=1, values={"arguments": {}})
    path = journal._file[1]
    mine = sorted(Path(settings.ASIXTO_CALL_JOURNAL_DIR).glob(f"{socket.gethostname()}--{os.getpid()}--*"))
    begun_ids = [json.loads(line)["id"] for line in path.read_text().splitlines() if '"request_id"' in line]
    assert mine == [path] and os.path.getsize(path) < 2 * journal.JOURNAL_MAX_BYTES
    assert str(ids[7]) in begun_ids and len(begun_ids) < len(ids) / 2
    journal.stored([ids[7]])
