"""Keep a server's secrets out of the logs written while talking to it (T7).

Our own messages are redacted where they are built; the libraries underneath are not ours: the
SDK logs a server's malformed answer with pydantic's quote of it, httpx logs what it did. While an
exchange runs inside `secrets_in_scope(secrets)`, every log record created in that context (anyio
tasks inherit it) has those secrets blanked out of its message and of its formatted traceback,
whichever library wrote it. Outside such a scope records are left alone, at the cost of one
context-variable read each.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from tools.mcp.errors import redact

_in_scope: ContextVar[tuple[str, ...]] = ContextVar("asixto_mcp_secrets", default=())
_formatter = logging.Formatter()


@contextmanager
def secrets_in_scope(secrets: Iterable[str]) -> Iterator[None]:
    token = _in_scope.set(tuple({*_in_scope.get(), *secrets}))
    try:
        yield
    finally:
        _in_scope.reset(token)


def _redacting(factory):
    def make_record(*args, **kwargs) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        secrets = _in_scope.get()
        if secrets:
            try:
                message = record.getMessage()
            except Exception:  # a malformed call; logging reports it when the record is handled
                return record
            record.msg, record.args = redact(message, secrets), ()
            if record.exc_info:
                # Formatted now, so the handler prints this text rather than the raw exception's.
                record.exc_text = redact(_formatter.formatException(record.exc_info), secrets)
        return record

    make_record.asixto_redacting = True
    return make_record


def install() -> None:
    """Wrap the process's log record factory once (idempotent)."""
    factory = logging.getLogRecordFactory()
    if not getattr(factory, "asixto_redacting", False):
        logging.setLogRecordFactory(_redacting(factory))


install()
