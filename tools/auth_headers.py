"""Auth headers a tenant gives for its MCP server (M1, T7): one rule for the API and the
dashboard. Names the platform sets itself or that frame the HTTP message (Host,
Content-Length, the MCP headers…) are refused, since a tenant's copy would be sent alongside or
instead of ours on every request; values are printable ASCII (httpx sends nothing else, and a
line break would inject a header)."""

import re

from django.utils.translation import gettext as _

MAX_HEADERS = 20
MAX_VALUE = 4000
_NAME = re.compile(r"[A-Za-z0-9_-]{1,100}")
_VALUE = re.compile(r"[\x20-\x7e\t]+")
PLATFORM_HEADERS = frozenset({
    "host", "content-length", "content-type", "accept", "accept-encoding", "transfer-encoding", "connection",
    "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "expect", "last-event-id",
})


def auth_header_problems(headers: dict) -> list[str]:
    """What is wrong with `headers` (name → value), one message per problem; [] when fine."""
    problems = []
    if len(headers) > MAX_HEADERS:
        problems.append(_("At most %(count)d headers.") % {"count": MAX_HEADERS})
    seen = set()
    for name, value in headers.items():
        shown = _shown(name)
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            problems.append(_("Not a valid header name: %(name)s") % {"name": shown})
            continue
        lowered = name.lower()
        if lowered in PLATFORM_HEADERS or lowered.startswith("mcp-"):
            problems.append(_("This header is set by the platform: %(name)s") % {"name": name})
        elif lowered in seen:
            problems.append(_("This header is listed twice: %(name)s") % {"name": name})
        seen.add(lowered)
        if not isinstance(value, str) or not value.strip():
            problems.append(_("The header %(name)s has no value.") % {"name": name})
        elif len(value) > MAX_VALUE or not _VALUE.fullmatch(value):
            problems.append(
                _("The value of %(name)s must be printable ASCII of at most %(size)d characters.")
                % {"name": name, "size": MAX_VALUE}
            )
    return problems


def _shown(name) -> str:
    # Echoed in an error message: printable, short.
    return re.sub(r"[^\x20-\x7e]", "?", str(name))[:100]
