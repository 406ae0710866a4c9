"""What leaves the process in an exported span (T7, and the customer's privacy; asixto/tracing.py).

Whatever the instrumentations record passes `Scrubbed` on its way out: no headers, no query
strings or user info in URLs, a server's route instead of its path (a password link's token is in
the path), SQL without its string literals, exceptions and statuses without their messages (an
error may quote a value). Our own spans carry ids, names, counts and outcomes only, so most leave
untouched and uncopied."""

import functools
import re
from urllib.parse import urlsplit, urlunsplit

_HEADER_PREFIXES = ("http.request.header.", "http.response.header.")
_URL_KEYS = ("http.url", "url.full")
_SERVER_PATH_KEYS = ("http.target", "url.path")
_STATEMENT_KEYS = ("db.statement", "db.query.text")
_DROPPED = ("url.query", "url.fragment", "db.query.parameter")
_STRING_LITERAL = re.compile(r"(?:[EeNnBbXxUu]&?)?'(?:[^']|'')*'")


def blanked(statement: str) -> str:
    """SQL with each string literal written into it replaced by '?'."""
    return _STRING_LITERAL.sub("'?'", statement) if "'" in statement else statement


@functools.lru_cache(maxsize=1024)
def without_query(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        if parts.port:
            netloc = f"{netloc}:{parts.port}"
    except ValueError:
        return ""
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def scrubbed_attributes(attributes, *, server: bool) -> dict:
    """A span's attributes as they may leave the process (see the module)."""
    clean = {}
    for key, value in (attributes or {}).items():
        if key.startswith(_HEADER_PREFIXES) or key.startswith(_DROPPED):
            continue
        if key in _URL_KEYS and isinstance(value, str):
            if server:
                continue  # the route stays; the path may hold a token
            value = without_query(value)
        elif key in _SERVER_PATH_KEYS and server:
            continue
        elif key == "http.target" and isinstance(value, str):
            value = value.split("?", 1)[0]
        elif key in _STATEMENT_KEYS and isinstance(value, str):
            value = blanked(value)
        clean[key] = value
    return clean


class Scrubbed:
    """A span exporter around another: each span leaves as `scrubbed_attributes` makes it, its
    events with their name (an exception's type too) and nothing else, its status without a message."""

    def __init__(self, inner):
        self._inner = inner

    def export(self, spans):
        return self._inner.export([self._scrub(span) for span in spans])

    @staticmethod
    def _scrub(span):
        from opentelemetry.sdk.trace import Event, ReadableSpan
        from opentelemetry.trace import SpanKind, Status

        attributes = scrubbed_attributes(span.attributes, server=span.kind == SpanKind.SERVER)
        if not span.events and span.status.description is None and attributes == span.attributes:
            return span  # nothing to take out (our own spans, most client ones): not copied
        events = [Event(event.name, {key: value for key, value in (event.attributes or {}).items() if key == "exception.type"},
                        event.timestamp) for event in span.events]
        return ReadableSpan(
            name=span.name, context=span.context, parent=span.parent, resource=span.resource, links=span.links,
            attributes=attributes, events=events,
            kind=span.kind, status=Status(span.status.status_code), start_time=span.start_time, end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope,
        )

    def shutdown(self):
        self._inner.shutdown()

    def force_flush(self, timeout_millis=30000):
        return self._inner.force_flush(timeout_millis)
