"""The connection layer's one error type, `McpError`, and the helpers that keep secrets out of it.

Callers branch on `.kind`: `connect` (nothing was sent), `dropped` (the connection broke; a
request may have run), `timeout` (no answer in time; never retried, SPEC G3), `http` (the
server answered with a failing HTTP status, kept in `.http_status` with `.retry_after`),
`protocol` (the server answered something that is not valid MCP, or an MCP error) and
`process` (a stdio server could not start or exited on its own). `.message` is one or two
English sentences fit for an admin's screen: no header values, no environment values, no
URL credentials or query strings.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit, urlunsplit

KINDS = frozenset({"connect", "dropped", "timeout", "http", "protocol", "process"})

# Secrets shorter than this are not redacted: replacing "1" or "true" everywhere would mangle
# the message without protecting anything.
_MIN_SECRET_LENGTH = 6
_REDACTED = "[redacted]"


class McpError(Exception):
    """A failed exchange with an MCP server; see the module docstring for the kinds."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        http_status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown McpError kind {kind!r}")
        super().__init__(kind, message)
        self.kind = kind
        self.message = message
        self.http_status = http_status
        self.retry_after = retry_after

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[object, ...]:
        # Celery pickles exceptions raised by tasks; keep the keyword-only fields across that.
        state = {"http_status": self.http_status, "retry_after": self.retry_after}
        return (type(self), (self.kind, self.message), state)

    def __repr__(self) -> str:
        status = f", http_status={self.http_status}" if self.http_status is not None else ""
        return f"McpError(kind={self.kind!r}{status}, message={self.message!r})"


def safe_url(url: str | None) -> str:
    """The URL for a message: scheme, host, port and path only (userinfo and query can hold tokens)."""
    if not url:
        return "(no url)"
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of each long-enough secret replaced by a marker."""
    for secret in sorted({s for s in secrets if len(s) >= _MIN_SECRET_LENGTH}, key=len, reverse=True):
        text = text.replace(secret, _REDACTED)
    return text


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def shorten(text: str, limit: int = 300) -> str:
    """One line of at most `limit` characters, for quoting a peer's words in a message."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
