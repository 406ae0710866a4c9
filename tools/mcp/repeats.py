"""An answer the SDK has already checked, recognised when it comes again (P2, C7).

A catalog sync reads `tools/list` twice to catch a server whose order changes (C7). The SDK
checks every result against the protocol revision's models before handing it over — for a
5,000-tool listing that means building and dumping 5,000 pydantic models, about as much CPU as
parsing the answer itself. When the second read's answer is equal to the first's, that check
has nothing new to say: the first answer passed it.

`RepeatAwareDispatcher` is the SDK's own JSON-RPC dispatcher (passed to `ClientSession` through
its `dispatcher=` parameter): every request is sent, stamped and answered as usual; only an
answer to `method` that is equal to the answer already checked for the same request of the
earlier read (the n-th page to the n-th page) is raised as `KnownAnswer` from where the raw
result leaves the dispatcher, before the SDK checks it again. Any other answer, and every
answer that differs in anything at all, goes through the SDK's check as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher


class KnownAnswer(Exception):
    """The answer to a request was equal to one the SDK had checked: `result` (as received)."""

    def __init__(self, result: dict[str, Any]):
        super().__init__("an answer equal to one already checked")
        self.result = result


class RepeatAwareDispatcher(JSONRPCDispatcher):
    """The SDK dispatcher; the n-th answer to `method` equal to `known[n]` raises KnownAnswer."""

    def __init__(self, read_stream: Any, write_stream: Any, *, method: str, known: Sequence[Mapping[str, Any]]):
        super().__init__(read_stream, write_stream)
        self._method, self._known, self._answered = method, known, 0

    async def send_raw_request(self, method: str, params: Mapping[str, Any] | None, opts: Any = None, **more: Any
                               ) -> dict[str, Any]:
        result = await super().send_raw_request(method, params, opts, **more)
        if method == self._method:
            index, self._answered = self._answered, self._answered + 1
            if index < len(self._known) and result == self._known[index]:
                raise KnownAnswer(result)
        return result
