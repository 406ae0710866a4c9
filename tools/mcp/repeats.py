"""Answers the SDK has already checked, recognised when they come again (P2, C7).

A catalog sync reads `tools/list` twice (C7), and the periodic sync reads it again and again
while nothing changes. For a 5,000-tool server each read costs the SDK about 0.5 s of CPU to
parse the 10 MB answer, and the first as much again to check it against the revision's models.
An answer that is, byte for byte, one already checked has nothing new to say.

`PageBook` is what one listing knows before it reads: for its n-th page, a page already checked
(`Page`: the sha256 of its body, its item count and next cursor): the same page of the sync's
first read, or of the listing the stored catalog was read from (tools/sync.py keeps those, with
everything else the catalog depended on). The transport gives the book every answer to the
listing's requests whole, before the SDK parses it (`RecognisingStream` on a JSON body of
streamable HTTP, inside the byte budget; each line of a stdio child): the book takes its sha256, and when that is the known
page's, the SDK is given a stub answer instead: a result holding only this listing's random
nonce, which is never sent, so no server can answer it. `RepeatAwareDispatcher` (the SDK's own
JSON-RPC dispatcher, passed to `ClientSession` through its `dispatcher=` parameter, mcp 2.3)
raises it as `KnownAnswer(page)` where the raw result leaves the dispatcher, before the session
checks it. A recognised page keeps its body: if its items are needed after all (another page
changed), `Page.result` parses and checks it then, as the SDK would have.

Every other answer goes the SDK's whole way. One that is not a single JSON body or line (an SSE
stream, a compressed body) is not hashed; when, once parsed, it is equal to the first read's
page, only the SDK's check of it is skipped, as before. A stdio line's digest is kept as the
page's only once the line has been parsed as the answer to the listing's request (a child may
write notifications too).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx2
import mcp_types as types
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp_types import methods

# What the SDK's session checks a result against when nothing was negotiated (legacy, stateless).
DEFAULT_REVISION = "2025-11-25"


class Page:
    """One answer of a listing: the sha256 of its body (None when it did not come as one JSON
    body), how many items it holds and the cursor of the next page; its `result` as received,
    which for a page recognised by its bytes is parsed and checked only when asked for."""

    def __init__(self, *, digest: str | None, count: int, next_cursor: str | None = None,
                 result: dict[str, Any] | None = None, body: bytes | None = None, revision: str = DEFAULT_REVISION):
        self.digest, self.count, self.next_cursor = digest, count, next_cursor
        self._result, self._body, self._revision = result, body, revision

    @property
    def parsed(self) -> dict[str, Any] | None:
        """The result if it has been parsed, without parsing it."""
        return self._result

    @property
    def unread(self) -> bool:
        """Recognised by its bytes and not parsed (yet)."""
        return self._result is None

    def result(self, method: str) -> dict[str, Any]:
        """The result; a recognised body is parsed and checked as the SDK checks an answer to
        `method` (the same bytes passed that check before, in the same revision)."""
        if self._result is None:
            if self._body is None:
                raise ValueError("a stored page's digest has no content")
            message = types.jsonrpc_message_adapter.validate_json(self._body, by_name=False)
            if not isinstance(message, types.JSONRPCResponse):
                raise ValueError("a recognised answer is not a result")
            try:
                methods.validate_server_result(method, self._revision, message.result)
            except KeyError:
                pass  # as the session: a method the revision's table does not name is not checked
            self._result, self._body = message.result, None
        return self._result

    def holding(self, body: bytes, revision: str) -> Page:
        """This page, recognised in `body`: a page known only by its seal keeps the body, the
        content should the caller need it after all; a page read earlier already has its own."""
        if self._result is not None or self._body is not None:
            return self
        return Page(digest=self.digest, count=self.count, next_cursor=self.next_cursor, body=body, revision=revision)

    def sealed(self) -> dict[str, Any]:
        """What a later listing needs to recognise this page (tools/sync.py stores it)."""
        return {"sha256": self.digest, "count": self.count, "next": self.next_cursor}

    @classmethod
    def from_seal(cls, seal: Mapping[str, Any]) -> Page:
        return cls(digest=seal["sha256"], count=seal["count"], next_cursor=seal["next"])


class KnownAnswer(Exception):
    """The answer to a request was a page already checked: `page`."""

    def __init__(self, page: Page):
        super().__init__("an answer equal to one already checked")
        self.page = page


class PageBook:
    """What one listing of `method` knows: `known[n]`, a page already checked, for its n-th
    request; and, as it reads, the sha256 of each page that came as one JSON body."""

    def __init__(self, method: str, known: Sequence[Page] = ()):
        self.method, self.known = method, list(known)
        self.revision = DEFAULT_REVISION  # the session's, set once it is negotiated
        self.digests: dict[int, str] = {}
        self.recognised: dict[int, Page] = {}
        self.asking: int | None = None  # the page whose answer is awaited (`ask`, by the dispatcher)
        self._in_flight: Any = None  # stdio: the id of the listing's latest request
        self._nonce = secrets.token_hex(16)

    def ask(self, index: int | None) -> None:
        """The dispatcher sends the request for page `index` (None: no listing request in flight)."""
        self.asking, self._in_flight = index, None

    def answer(self, request: bytes, body: bytes) -> bytes:
        """HTTP: the body the SDK is given for a JSON answer to `request` (the body we posted):
        `body` itself, or a stub when it answers the listing's request for page n with the very
        bytes of the known page n."""
        sent = self._listing_request(request)
        if sent is None:
            return body
        digest = hashlib.sha256(body).hexdigest()
        self.digests[self.asking] = digest
        return self._stub(sent["id"], digest, body) or body

    def posting(self, request: bytes) -> None:
        """stdio: the transport writes `request`; the listing's request in flight is noted."""
        if (sent := self._listing_request(request)) is not None:
            self._in_flight = sent["id"]

    def answer_line(self, line: bytes) -> tuple[bytes, str | None]:
        """stdio: a line of the child's output while the listing's request is in flight: a stub
        in its place when it is the known page n's very bytes; else the line itself and its
        digest, to be `noted` once parsed as the answer (a line may be anything else too)."""
        if self.asking is None or self._in_flight is None:
            return line, None
        digest = hashlib.sha256(line).hexdigest()
        stub = self._stub(self._in_flight, digest, line)
        return (stub, None) if stub is not None else (line, digest)

    def noted(self, answer_id: Any, digest: str) -> None:
        """stdio: the line of `digest` was parsed as the answer to request `answer_id`."""
        if self.asking is not None and self._in_flight is not None and answer_id == self._in_flight:
            self.digests[self.asking] = digest

    def _listing_request(self, request: bytes) -> dict[str, Any] | None:
        """The listing's request for the page awaited, parsed from the bytes we sent, or None."""
        if self.asking is None:
            return None
        try:
            sent = json.loads(request)
        except ValueError:
            return None
        if not isinstance(sent, dict) or sent.get("method") != self.method or "id" not in sent:
            return None
        return sent

    def _stub(self, request_id: Any, digest: str, body: bytes) -> bytes | None:
        """For the very bytes of the known page awaited: what the SDK gets in their place."""
        index = self.asking
        known = self.known[index] if index is not None and index < len(self.known) else None
        if known is None or known.digest != digest:
            return None
        self.recognised[index] = known.holding(body, self.revision)
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": self.stub}).encode()

    @property
    def stub(self) -> dict[str, str]:
        return {"com.asixto/recognised": self._nonce}

    def earlier(self, index: int) -> Page | None:
        return self.known[index] if index < len(self.known) else None


class RecognisingStream(httpx2.AsyncByteStream):
    """A JSON answer's body, read whole (the SDK reads it whole too, within the byte budget of
    the stream it wraps) and handed to the SDK as the `PageBook` says."""

    def __init__(self, inner: httpx2.AsyncByteStream, *, book: PageBook, request: bytes) -> None:
        self._inner, self._book, self._request = inner, book, request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = [chunk async for chunk in self._inner]
        yield self._book.answer(self._request, b"".join(chunks))

    async def aclose(self) -> None:
        await self._inner.aclose()


class RepeatAwareDispatcher(JSONRPCDispatcher):
    """The SDK dispatcher; the n-th answer to the book's method that the book recognised, or that
    is equal to the earlier reading's parsed page n, raises KnownAnswer."""

    def __init__(self, read_stream: Any, write_stream: Any, *, book: PageBook):
        super().__init__(read_stream, write_stream)
        self._book, self._asked = book, 0

    async def send_raw_request(self, method: str, params: Mapping[str, Any] | None, opts: Any = None, **more: Any
                               ) -> dict[str, Any]:
        if method != self._book.method:
            return await super().send_raw_request(method, params, opts, **more)
        index, self._asked = self._asked, self._asked + 1
        self._book.ask(index)
        try:
            result = await super().send_raw_request(method, params, opts, **more)
        finally:
            self._book.ask(None)
        recognised = self._book.recognised.pop(index, None)
        if recognised is not None and result == self._book.stub:
            raise KnownAnswer(recognised)
        earlier = self._book.earlier(index)
        if earlier is not None and earlier.parsed is not None and result == earlier.parsed:
            raise KnownAnswer(earlier)
        return result
