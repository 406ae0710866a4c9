"""The two things the catalog needs from a server: `probe` it and `list_tools`; and, read-only,
what else it offers (`list_offered`: its resources and prompts, issue 20).

Each has an async form (`probe_async`, `list_tools_async`) and a sync wrapper for Django
services and Celery tasks; the sync form runs its own event loop, so it must not be called
from inside one. Every call opens and closes its own connection (or child process).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND
from pydantic import TypeAdapter

from tools.mcp.connection import Exchange, run_operation
from tools.mcp.errors import McpError
from tools.mcp.repeats import DEFAULT_REVISION, KnownAnswer, Page, PageBook, RepeatAwareDispatcher
from tools.mcp.target import ProbeResult, ServerTarget

# A catalog this long is a misbehaving paginator, not a real server.
MAX_PAGES = 1000

# The requests of the listings, by the result's key: tools (the catalog), and what a server
# offers besides (issue 20), read-only.
LISTS = {"tools": types.ListToolsRequest, "resources": types.ListResourcesRequest, "prompts": types.ListPromptsRequest}
OFFERED = ("resources", "prompts")

# The result exactly as received (after the SDK's schema check of that revision's result
# shape): tools keep every key and the server's order, nothing is re-serialised from models.
_RAW_RESULT = TypeAdapter(dict[str, Any])


def probe(target: ServerTarget) -> ProbeResult:
    """Send a real `server/discover` and say which revision the server speaks (SPEC M4)."""
    return anyio.run(probe_async, target)


class Listing(list):
    """The items of a listing, in the server's order, and the `pages` they came in (`Page`: each
    result as received, and as the SDK checked it). `count`: how many items the server listed.

    A listing read with `known` pages (a sync's first read, given the stored listing's seals)
    whose every page was recognised by its bytes is `unread`: it holds no items until `read()`,
    since a caller that learns the listing is the stored one needs none (P2)."""

    def __init__(self, items=(), pages: list[Page] | None = None, *, method: str = "tools/list", kind: str = "tools"):
        super().__init__(items)
        self.pages = pages if pages is not None else []
        self.method, self.kind = method, kind
        self.unread = False
        self.limit: int | None = None

    @property
    def count(self) -> int:
        return sum(page.count for page in self.pages)

    @property
    def digests(self) -> list[str | None]:
        return [page.digest for page in self.pages]

    def read(self) -> Listing:
        """Fill in the items of an unread listing (parsing and checking its recognised pages)."""
        if self.unread:
            self.unread = False
            for page in self.pages:
                self.extend(page.result(self.method)[self.kind])
            if self.limit is not None:
                del self[self.limit + 1:]
        return self

    def __repr__(self) -> str:
        # asyncio describes a finished task by its result (reprlib: in full for a class it does
        # not know); 5,000 tools took 0.15 s each time (P2).
        return f"<Listing of {self.count} items in {len(self.pages)} pages>"


def list_tools(target: ServerTarget, *, limit: int | None = None, previous: Listing | None = None,
               known: Sequence[Page] = ()) -> Listing:
    """Every tool the server lists, in its order, each as the wire-form dict it sent (SPEC M5).

    With `limit`, reading stops as soon as more than `limit` tools have come (no further pages
    are asked for): the result then holds `limit + 1` tools, which tells the caller that the
    server lists more than it accepts. A page answered with the very bytes of a page already
    checked is not parsed or checked by the SDK again (repeats.py): `previous`, an earlier
    reading of the same target (a sync reads twice, C7), whose equal pages are taken as they
    are; `known`, the seals of a stored listing's pages, n-th for n-th: when every page is the
    known one the listing comes back `unread`."""
    return anyio.run(partial(list_tools_async, target, limit=limit, previous=previous, known=known))


async def probe_async(target: ServerTarget) -> ProbeResult:
    async def learn(session: ClientSession, exchange: Exchange) -> ProbeResult:
        info = session.server_info
        return ProbeResult(
            protocol_version=session.protocol_version or "",
            legacy=session.initialize_result is not None,
            discover=exchange.discover,
            server_info=info.model_dump(by_alias=True, mode="json", exclude_none=True) if info is not None else None,
        )

    return await run_operation(target, learn, probe=True)


async def list_tools_async(target: ServerTarget, *, limit: int | None = None, previous: Listing | None = None,
                           known: Sequence[Page] = ()) -> Listing:
    book = PageBook("tools/list", previous.pages if previous is not None else known)
    return await run_operation(
        target, partial(_list_all_pages, limit=limit, book=book),
        dispatcher=partial(RepeatAwareDispatcher, book=book), book=book,
    )


def list_offered(target: ServerTarget, kind: str, *, limit: int | None = None) -> list[dict[str, Any]]:
    """What the server offers besides tools (issue 20): every item of `resources/list` or
    `prompts/list` (`kind`: "resources" or "prompts"), in its order, as the wire-form dicts it
    sent, with the same transports, outbound policy, deadline and byte bounds as `list_tools`
    (and the same `limit` behaviour). A server that does not offer them (no such capability, or
    "method not found") lists nothing: []."""
    return anyio.run(partial(list_offered_async, target, kind, limit=limit))


async def list_offered_async(target: ServerTarget, kind: str, *, limit: int | None = None) -> list[dict[str, Any]]:
    if kind not in OFFERED:
        raise ValueError(f"not a listing: {kind}")

    async def read(session: ClientSession, exchange: Exchange) -> list[dict[str, Any]]:
        capabilities = session.server_capabilities
        if capabilities is not None and getattr(capabilities, kind, None) is None:
            return []  # declared at negotiation: the server offers none
        try:
            return list(await _list_all_pages(session, exchange, kind=kind, limit=limit))
        except MCPError as exc:
            if exc.code == METHOD_NOT_FOUND:
                return []
            raise

    return await run_operation(target, read)


async def _list_all_pages(session: ClientSession, exchange: Exchange, *, kind: str = "tools",
                          limit: int | None = None, book: PageBook | None = None) -> Listing:
    listing = Listing(method=f"{kind}/list", kind=kind)
    listing.limit = limit
    if book is not None:
        book.revision = session.protocol_version or DEFAULT_REVISION
    cursor: str | None = None
    seen_cursors: set[str] = set()
    for page_number in range(1, MAX_PAGES + 1):
        exchange.method = f"{kind}/list" if page_number == 1 else f"{kind}/list (page {page_number})"
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        try:
            result = await session.send_request(LISTS[kind](params=params), _RAW_RESULT)
        except KnownAnswer as known:
            page = known.page
        else:
            digest = book.digests.get(page_number - 1) if book is not None else None
            page = _checked_page(result, kind, exchange, digest=digest)
        listing.pages.append(page)
        if limit is not None and listing.count > limit:
            break
        cursor = page.next_cursor
        if not cursor:
            break
        if cursor in seen_cursors:
            raise McpError("protocol", "cursor_loop", exchange.params())
        seen_cursors.add(cursor)
    else:
        raise McpError("protocol", "too_many_pages", exchange.params(pages=MAX_PAGES))
    # Unread only when nothing was parsed: then the caller may not need the items at all.
    listing.unread = True
    if not all(page.unread for page in listing.pages):
        listing.read()
    return listing


def _checked_page(result: dict[str, Any], kind: str, exchange: Exchange, *, digest: str | None) -> Page:
    result_type = result.get("resultType", "complete")
    if result_type != "complete":
        # SPEC G4 in spirit: the only acceptable answer is a complete one.
        raise McpError("protocol", "result_type", exchange.params(result_type=repr(str(result_type)[:50])))
    items = result.get(kind)
    if not isinstance(items, list):
        raise McpError("protocol", "invalid_result", exchange.params(place=kind, reason="not a list"))
    return Page(digest=digest, count=len(items), next_cursor=result.get("nextCursor"), result=result)


def call_tool(target: ServerTarget, name: str, arguments: dict[str, Any], *, meta: dict[str, Any]) -> dict[str, Any]:
    """One `tools/call`, its result returned as the raw wire dict (for certification probes,
    C8/C9, which judge exactly what the server sent, and the gateway's SDK path). `meta` goes
    into `params._meta` next to the protocol's own keys (G1; build it with `tools.mcp.meta`).
    The whole call, connecting included, is bounded by `target.total_timeout` and its bytes by
    `target.max_response_bytes`. No retries here: the gateway decides those."""
    return anyio.run(call_tool_async, target, name, arguments, meta)


async def call_tool_async(target: ServerTarget, name: str, arguments: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    async def call(session: ClientSession, exchange: Exchange) -> dict[str, Any]:
        exchange.method = f"tools/call {name}"
        params = types.CallToolRequestParams(name=name, arguments=arguments, _meta=meta)
        return await session.send_request(types.CallToolRequest(params=params), _RAW_RESULT)

    return await run_operation(target, call)
