"""Every attempt a server may have seen is named in a record (G9, issue 19), even when the process that
sent it is killed before its record is stored.

Call records are stored by a writer thread after the call (`records.py`): a process killed with
SIGKILL (a worker out of memory, a deploy that does not wait) loses the calls it was making and the
records still in its queue, though their requests reached the servers. So, before each attempt is
sent, one line goes to this process's journal (a file of its own under ASIXTO_CALL_JOURNAL_DIR: an
append without fsync, a few microseconds; the kernel keeps it when the process dies), and when the
writer has stored a record, a line says so. A journal whose process is gone is read by
`recover()` (a worker at start, and every minute from beat): each record begun and not stored is
stored as an `interrupted` call with the request ids of its attempts, then the journal is deleted.

A journal is named by host, process id and the process's start time, so a reused pid is not taken
for the process that died; a journal of another host (a shared directory) is left to that host.
Only calls still open are kept: past JOURNAL_MAX_BYTES the journal starts again from them."""

import json
import logging
import os
import socket
import threading
import uuid
from pathlib import Path

from django.conf import settings
from django.utils import timezone

log = logging.getLogger(__name__)

JOURNAL_MAX_BYTES = 1 << 20
MAX_ARGUMENT_CHARS = 2000  # of a call's arguments kept in its journal line
INTERRUPTED_ERROR = "The process making the call ended before its answer was recorded (killed or crashed)."

# Built once: json.dumps with any option builds a new encoder on every call (this runs before every attempt, P1).
_JSON = json.JSONEncoder(ensure_ascii=False, default=str)
_lock = threading.Lock()
_file = None  # (fd, path) of this process's journal, opened on its first call
_open: dict[str, list[str]] = {}  # record id → its journal lines, until its record is stored
_size = 0


def _enabled() -> bool:
    return bool(getattr(settings, "ASIXTO_CALL_JOURNAL", True))


def _folder() -> Path:
    return Path(settings.ASIXTO_CALL_JOURNAL_DIR)


def _start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode(errors="replace")
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]  # field 22, counted after the command's closing bracket


def _name(pid: int, ticks: str) -> str:
    return f"{socket.gethostname()}--{pid}--{ticks}.jsonl"


def _write(line: str) -> None:
    global _file, _size
    if _file is None or _size > JOURNAL_MAX_BYTES:
        _restart()
    data = (line + "\n").encode()
    os.write(_file[0], data)
    _size += len(data)


def _restart() -> None:
    """A fresh journal holding only the calls still open; the old one goes."""
    global _file, _size
    old = _file
    folder = _folder()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    pid = os.getpid()
    path = folder / _name(pid, _start_ticks(pid) or "0")
    if old is not None:
        path = path.with_suffix(f".{uuid.uuid4().hex[:8]}.jsonl")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    lines = [line for kept in _open.values() for line in kept]
    data = "".join(line + "\n" for line in lines).encode()
    if data:
        os.write(fd, data)
    _file, _size = (fd, path), len(data)
    if old is not None:
        os.close(old[0])
        old[1].unlink(missing_ok=True)


def sending(*, record_id, schema: str, request_id: str, attempt: int, values: dict) -> None:
    """Before an attempt goes out: what its record would say if the process died now. `values`:
    the record's fields known before the call (tool, context, arguments, start)."""
    if not _enabled():
        return
    entry = {"id": str(record_id), "schema": schema, "request_id": request_id, "attempt": attempt}
    if attempt == 1:
        arguments = _JSON.encode(values.get("arguments"))
        entry["values"] = {**values, "arguments": arguments[:MAX_ARGUMENT_CHARS]}
    line = _JSON.encode(entry)
    try:
        with _lock:
            _write(line)
            _open.setdefault(entry["id"], []).append(line)
    except OSError as exc:  # a full disk must not stop calls: the record is still written as usual
        log.warning("call journal not written: %s", exc)


def stored(record_ids) -> None:
    """The writer stored these records: nothing of them is left to recover."""
    if not _enabled():
        return
    ids = [str(record_id) for record_id in record_ids]
    try:
        with _lock:
            known = [record_id for record_id in ids if _open.pop(record_id, None) is not None]
            if known and _file is not None:
                _write(json.dumps({"stored": known}))
    except OSError as exc:
        log.warning("call journal not written: %s", exc)


def _forget_after_fork():
    # A forked child journals in a file of its own; the parent's open calls are the parent's.
    global _lock, _file, _open, _size
    _lock, _file, _open, _size = threading.Lock(), None, {}, 0


os.register_at_fork(after_in_child=_forget_after_fork)


def _dead(path: Path) -> bool:
    try:
        host, pid, ticks = path.name.split(".", 1)[0].split("--")
    except ValueError:
        return False
    return host == socket.gethostname() and _start_ticks(int(pid)) != ticks


def _unfinished(path: Path) -> dict[str, dict]:
    """The records a journal begun and did not see stored: id → schema, values, request ids."""
    begun, done = {}, set()
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # the line the kill cut short
            if "stored" in entry:
                done.update(entry["stored"])
            elif "id" in entry:
                record = begun.setdefault(entry["id"], {"schema": entry.get("schema"), "values": {}, "requests": []})
                record["values"] = entry.get("values") or record["values"]
                record["requests"].append(entry.get("request_id"))
    return {record_id: record for record_id, record in begun.items() if record_id not in done and record["values"]}


def recover() -> int:
    """Stores every call a dead process of this host began and did not record; returns how many."""
    from django_tenants.utils import schema_context

    from tenants.models import Tenant
    from tools.gateway import records
    from tools.models import ToolCall

    folder = _folder()
    if not _enabled() or not folder.is_dir():
        return 0
    count = 0
    for path in sorted(folder.glob("*.jsonl")):
        if not _dead(path):
            continue
        unfinished = _unfinished(path)
        schemas = set(Tenant.objects.filter(schema_name__in={r["schema"] for r in unfinished.values()})
                      .values_list("schema_name", flat=True))
        for schema in schemas:
            mine = {record_id: r for record_id, r in unfinished.items() if r["schema"] == schema}
            with schema_context(schema):
                have = {str(pk) for pk in ToolCall.objects.filter(pk__in=list(mine)).values_list("pk", flat=True)}
                for record_id, record in mine.items():
                    if record_id not in have:
                        records.submit(_interrupted(record_id, record))
                        count += 1
                records.flush()
        path.unlink(missing_ok=True)
    if count:
        log.warning("recorded %d calls interrupted by the end of their process", count)
    return count


def _interrupted(record_id: str, record: dict) -> dict:
    from tools.models import ToolCall

    values = record["values"]
    try:
        arguments = json.loads(values.get("arguments") or "{}")
    except ValueError:
        arguments = {"_": values.get("arguments", "")}  # cut at MAX_ARGUMENT_CHARS
    started_at = values.get("started_at")
    known = ("tool_id", "tool_name", "source", "turn_id", "conversation_id", "channel", "idempotency_key")
    return {
        **{key: values[key] for key in known if values.get(key) is not None},  # else the column's default
        "id": uuid.UUID(record_id), "arguments": arguments if isinstance(arguments, dict) else {"_": arguments},
        "started_at": timezone.datetime.fromisoformat(started_at) if started_at else timezone.now(),
        "request_ids": [r for r in record["requests"] if r], "attempts": len(record["requests"]),
        "outcome": ToolCall.Outcome.INTERRUPTED, "error": INTERRUPTED_ERROR, "duration_ms": 0,
    }
