"""The connection layer's one error type, `McpError`, its texts, and the helpers that keep secrets
out of it.

Callers branch on `.kind`: `connect` (nothing was sent), `dropped` (the connection broke; a
request may have run), `timeout` (no answer within the deadline; never retried, SPEC G3), `http`
(the server answered with a failing HTTP status, kept in `.http_status` with `.retry_after`),
`protocol` (the server answered something that is not valid MCP, or an MCP error), `process` (a
stdio server could not start or exited on its own) and `too_large` (the server sent more bytes
than one call may read).

What happened is stored as a stable `.code` and plain `.params` (A3): a reader sees
`render_error(code, params)` in the language active when it is rendered, so a record or a sync
error written while a Spanish tenant was calling reads in English to an English-speaking admin.
`.message` renders in the active language; `str(error)` is always English, for logs. No text
holds header values, environment values, URL credentials or query strings: callers pass peer
words (`said`, `stderr`, `detail`) through `redact` with the target's secrets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

KINDS = frozenset({"connect", "dropped", "timeout", "http", "protocol", "process", "too_large"})

# Secrets shorter than this are not redacted: replacing "1" or "true" everywhere would mangle
# the message without protecting anything.
_MIN_SECRET_LENGTH = 6
_REDACTED = "[redacted]"
# Words of a header value that name an auth scheme, not a secret.
_SCHEME_WORDS = frozenset({"bearer", "basic", "digest", "token", "apikey", "api-key"})

# One sentence per code. `%(where)s` is the server ("The MCP server at https://…" or "The MCP
# server process 'x'"); the other placeholders are the error's params. Optional params add a
# sentence of their own (see _EXTRAS).
MESSAGES = {
    "connect_refused": gettext_lazy("%(where)s could not be reached: the connection was refused. Nothing was sent."),
    "connect_timeout": gettext_lazy("%(where)s could not be reached: the connection attempt timed out. Nothing was sent."),
    "dns_failed": gettext_lazy("%(where)s could not be reached: its host name could not be resolved. Nothing was sent."),
    "dns_timeout": gettext_lazy(
        "%(where)s could not be reached: looking up its host name took too long. Nothing was sent."
    ),
    "tls_unverified": gettext_lazy(
        "%(where)s could not be reached: its TLS certificate could not be verified. Nothing was sent."
    ),
    "connect_failed": gettext_lazy("%(where)s could not be reached (%(detail)s). Nothing was sent."),
    "timeout": gettext_lazy("%(where)s did not answer %(method)s in time (%(timeout)s s per request, %(total)s s in all)."),
    "dropped": gettext_lazy(
        "%(where)s dropped the connection during %(method)s (%(error_type)s); the request may have run."
    ),
    "stream_ended": gettext_lazy("%(where)s ended its event stream before answering %(method)s."),
    "http_status": gettext_lazy("%(where)s answered HTTP %(status)s to %(method)s."),
    "too_large": gettext_lazy("%(where)s sent more than %(limit)s bytes in answer to %(method)s; the answer was not read."),
    "compressed": gettext_lazy("%(where)s compressed its answer to %(method)s (%(encoding)s) although it was asked not to."),
    "not_json": gettext_lazy("%(where)s answered %(method)s with something that is not JSON."),
    "wrong_id": gettext_lazy("%(where)s answered %(method)s with the response to another request."),
    "no_result": gettext_lazy("%(where)s answered %(method)s without a result object."),
    "peer_error": gettext_lazy("%(where)s answered %(method)s with error %(error_code)s: %(said)s"),
    "invalid_result": gettext_lazy("%(where)s answered %(method)s with a result that is not valid MCP (%(place)s: %(reason)s)."),
    "result_type": gettext_lazy("%(where)s answered %(method)s with resultType %(result_type)s."),
    "cursor_loop": gettext_lazy("%(where)s repeated a tools/list cursor; its pagination loops."),
    "too_many_pages": gettext_lazy("%(where)s listed more than %(pages)s pages of tools."),
    "cached_discover_invalid": gettext_lazy(
        "The cached server/discover result cannot be used (%(detail)s); probe the server again."
    ),
    "unsupported_versions": gettext_lazy(
        "%(where)s speaks only protocol versions %(versions)s, none of which Asixto supports."
    ),
    "process_start_failed": gettext_lazy("%(where)s could not be started: %(detail)s."),
    "process_exited": gettext_lazy("%(where)s exited with status %(status)s during %(method)s."),
    "process_killed": gettext_lazy("%(where)s was killed by %(signal)s during %(method)s."),
    "process_bad_output": gettext_lazy("%(where)s %(detail)s during %(method)s."),
    "process_timeout": gettext_lazy(
        "%(where)s did not answer %(method)s in time (%(timeout)s s per request, %(total)s s in all); it was stopped."
    ),
    "closed_output": gettext_lazy("%(where)s closed its output during %(method)s."),
    "failed": gettext_lazy("%(where)s failed during %(method)s: %(error_type)s: %(detail)s"),
    "outbound_refused": gettext_lazy("The platform does not connect to %(url)s: %(detail)s"),
    "unreachable": gettext_lazy("The MCP server cannot be used: %(detail)s"),
}

# Optional params, each adding a sentence after the code's own, in this order.
_EXTRAS = (
    ("retry_after", gettext_lazy("It asks to retry after %(retry_after)s s.")),
    ("said", gettext_lazy("It said: %(said)s")),
    ("stderr", gettext_lazy("Its last stderr output: %(stderr)s")),
    ("stale_discover", gettext_lazy("The cached discovery result may be stale: probe the server again.")),
)
_STATUS_HINTS = {
    401: gettext_lazy("Check the server's auth headers."),
    403: gettext_lazy("Check the server's auth headers."),
    404: gettext_lazy("Check the URL."),
}


class McpError(Exception):
    """A failed exchange with an MCP server; see the module docstring for kinds and codes."""

    def __init__(
        self,
        kind: str,
        code: str,
        params: Mapping[str, Any] | None = None,
        *,
        http_status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown McpError kind {kind!r}")
        super().__init__(kind, code, dict(params or {}))
        self.kind = kind
        self.code = code
        self.params = dict(params or {})
        self.http_status = http_status
        self.retry_after = retry_after

    @property
    def message(self) -> str:
        """The text in the active language (A3)."""
        return render_error(self.code, self.params)

    def __str__(self) -> str:
        with translation.override("en"):
            return render_error(self.code, self.params)

    def __reduce__(self) -> tuple[object, ...]:
        # Celery pickles exceptions raised by tasks; keep the keyword-only fields across that.
        state = {"http_status": self.http_status, "retry_after": self.retry_after}
        return (type(self), (self.kind, self.code, self.params), state)

    def __repr__(self) -> str:
        status = f", http_status={self.http_status}" if self.http_status is not None else ""
        return f"McpError(kind={self.kind!r}, code={self.code!r}{status}, params={self.params!r})"


def render_error(code: str, params: Mapping[str, Any] | None) -> str:
    """The text for a stored code and its params, in the active language."""
    params = dict(params or {})
    template = MESSAGES.get(code)
    if template is None:
        return _("The MCP server failed (%(code)s).") % {"code": code}
    values = _Defaults({key: _plain(value) for key, value in params.items()}, where=_where(params))
    if params.get("detail_code"):  # a refusal stored as its msgid and values: in the reader's language
        try:
            values["detail"] = _(params["detail_code"]) % params.get("detail_params", {})
        except (KeyError, TypeError, ValueError):  # a broken translation: the stored English text
            pass
    parts = [str(template) % values]
    if code == "http_status" and params.get("status") in _STATUS_HINTS:
        parts.append(str(_STATUS_HINTS[params["status"]]))
    for key, extra in _EXTRAS:
        if params.get(key) not in (None, "", False) and not (key == "said" and code == "peer_error"):
            parts.append(str(extra) % values)
    return " ".join(parts)


class _Defaults(dict):
    def __missing__(self, key: str) -> str:
        return "?"


def _plain(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value)
    return value


def _where(params: Mapping[str, Any]) -> str:
    if params.get("program"):
        return _("The MCP server process %(program)s") % {"program": repr(str(params["program"]))}
    return _("The MCP server at %(url)s") % {"url": params.get("url") or "(no url)"}


def safe_url(url: str | None) -> str:
    """The URL for a message: scheme, host, port and path only (userinfo and query can hold tokens)."""
    if isinstance(url, str) and len(url) <= 2048:
        return _safe_url(url)  # every call names its server's URL: parsed once per URL
    return _safe_url.__wrapped__(url)


@lru_cache(maxsize=1024)
def _safe_url(url: str | None) -> str:
    if not url:
        return "(no url)"
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(invalid url)"
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def secrets_of(*mappings: Mapping[str, str] | None) -> list[str]:
    """Every value of the given header or environment mappings, and each word of it: a server
    echoing a header tends to drop the "Bearer " (T7)."""
    values = [str(value) for mapping in mappings if mapping for value in mapping.values()]
    words = [word for value in values for word in value.split() if word.lower() not in _SCHEME_WORDS]
    return [*values, *words]


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of each long-enough secret replaced by a marker."""
    for secret in sorted({s for s in secrets if len(s) >= _MIN_SECRET_LENGTH}, key=len, reverse=True):
        text = text.replace(secret, _REDACTED)
    return text


def redact_params(params: Mapping[str, Any], secrets: Iterable[str]) -> dict[str, Any]:
    """`params` with the secrets blanked out of every text value."""
    secrets = list(secrets)
    return {key: redact(value, secrets) if isinstance(value, str)
            else redact_params(value, secrets) if isinstance(value, Mapping) else value
            for key, value in params.items()}


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
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
