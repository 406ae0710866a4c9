"""The seal of a stored catalog (P2, M5): which `tools/list` pages it was read from, and in what
context it was judged, so that a sync whose reads answer those very bytes again in the same
context knows it would change nothing, without parsing anything.

A seal is `{"context": key, "pages": [{"sha256", "count", "next"}, ...]}` on the server row
(`McpServer.listing_seal`), written by the sync that stored the catalog. Its pages are the
first read's, sealed only when the second read answered the same bytes (C7: a server whose two
reads differ is never taken as unchanged) and every page came as one plain JSON body (streamable
HTTP) or one line (stdio). The
context key holds everything else a sync's outcome depends on: the server's slug, contract
mode and revision, the tenant's scenarios and language, the size limits, the live tool rows
(name, position, definition hash, certification basis, the admin's overlay), the catalog
version it sealed, and the code that reads, stores and judges a listing (and the SDK's version,
which checked the pages). Anything that changes there changes the key, and the
next sync goes the whole way.
"""

import hashlib
import json
from importlib.metadata import version as installed_version
from pathlib import Path

from django.conf import settings

from tenants.selectors import current_tenant
from tools import catalog
from tools.certification import RULES_FINGERPRINT, tenant_language, tenant_scenarios
from tools.mcp import repeats
from tools.mcp.operations import Listing
from tools.mcp.repeats import Page
from tools.models import McpServer, Tool


def _code_fingerprint() -> str:
    # A deploy that changes how a listing is read, stored or judged, or the SDK that checks the
    # pages, changes this: the next sync of every server goes the whole way.
    digest = hashlib.sha256(RULES_FINGERPRINT.encode())
    for path in sorted({Path(__file__), Path(catalog.__file__), Path(repeats.__file__), Path(__file__).with_name("sync.py")}):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for package in ("mcp", "mcp-types", "pydantic-core"):
        digest.update(f"{package}=={installed_version(package)}".encode())
    return digest.hexdigest()


CODE_FINGERPRINT = _code_fingerprint()


def listing_context(server: McpServer) -> str:
    """The key of everything besides the listing that a sync of `server` depends on, as it
    stands now: with the live tool rows as the last sync left them (a row changed outside a
    sync, an overlay or a certification basis, is picked up by the next one, as before)."""
    tenant = current_tenant()
    live = list(
        Tool.objects.filter(server=server, removed_in__isnull=True).order_by("position", "name")
        .values_list("name", "position", "server_hash", "certification_basis", "overlay")
    )
    number = server.versions.order_by("-number").values_list("number", flat=True).first()
    context = [
        CODE_FINGERPRINT, server.slug, server.contract_mode, server.protocol_version, server.is_legacy,
        tenant_scenarios(tenant), tenant_language(tenant), settings.ASIXTO_MAX_TOOL_DEFINITION_BYTES,
        settings.ASIXTO_MAX_TOOLS_PER_SERVER, number, live,
    ]
    return hashlib.sha256(json.dumps(context, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def standing_pages(server: McpServer) -> list[Page]:
    """The sealed pages of the stored catalog, when its context is still the one it was sealed
    in (else none: the sync reads as if nothing were known)."""
    seal = server.listing_seal or {}
    if not seal.get("pages") or seal.get("context") != listing_context(server):
        return []
    return [Page.from_seal(page) for page in seal["pages"]]


def is_standing(server: McpServer, seal: dict) -> bool:
    """Whether `seal` (as the sync found it) is still the server's and in force: checked again
    under the server's lock, since another sync, or a change of context, may have come in between."""
    stored = McpServer.objects.filter(pk=server.pk).values_list("listing_seal", flat=True).first()
    return bool(seal) and stored == seal and seal.get("context") == listing_context(server)


def seal_of(server: McpServer, first: Listing, second: Listing) -> dict:
    """The seal of the catalog just stored from `first` (after the writes, in their transaction):
    its pages, when the second read answered the same bytes; else none."""
    digests = first.digests
    if not digests or None in digests or digests != second.digests:
        return {}
    return {"context": listing_context(server), "pages": [page.sealed() for page in first.pages]}
