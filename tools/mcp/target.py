"""What the connection layer is given (`ServerTarget`) and what a probe learns (`ProbeResult`).

Plain data with no Django in it: the catalog services build a target from a server row and
store the probe's findings back on it (the discover result is cached per server, SPEC M4).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TRANSPORTS = ("streamable_http", "sse", "stdio")

# The whole operation (spawn or connect, negotiation, every page) gets this many per-request
# timeouts, so one slow page cannot be multiplied by a long paginated catalog.
OPERATION_TIMEOUT_FACTOR = 3.0


@dataclass(frozen=True)
class ServerTarget:
    """One MCP server, as the connection layer needs to reach it.

    `headers` and `env` hold secrets: they are sent, never logged, and kept out of error
    messages. For stdio, `argv` was approved by an operator and `env` is the child's whole
    environment (nothing is inherited from the platform's own). `discover` is the cached
    `server/discover` result in wire form; with it a 2026-07-28 server is reached with no
    negotiation at all. `legacy` means the server speaks only an older revision.
    `operation_timeout` is the deadline of the whole operation (the gateway gives a call what is
    left of its own); `max_response_bytes` bounds what the HTTP transports read in it (None: no
    bound, for catalog listings, which have their own limits).
    """

    transport: str
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    argv: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout: float = 10.0
    discover: dict[str, Any] | None = None
    legacy: bool = False
    operation_timeout: float | None = None
    # Where HTTP connections may go (M2): a `tenants.outbound.OutboundPolicy` built in sync code
    # (approvals need the database); None: the operator setting alone, without approvals.
    outbound: Any = None
    max_response_bytes: int | None = None
    # stdio: (uid, gid) this server runs as when the platform is root, its own (tools.stdio_launch);
    # None: the shared stdio user (tools.mcp.stdio.stdio_user).
    user: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        # Rows hand over None for "no headers" and lists for argv; normalise once, here.
        object.__setattr__(self, "headers", dict(self.headers or {}))
        object.__setattr__(self, "env", dict(self.env or {}))
        object.__setattr__(self, "argv", tuple(self.argv or ()))
        if self.transport not in TRANSPORTS:
            raise ValueError(f"unknown MCP transport {self.transport!r}; expected one of {', '.join(TRANSPORTS)}")
        if self.transport == "stdio":
            if not self.argv:
                raise ValueError("a stdio target needs argv (the approved command)")
        elif not self.url:
            raise ValueError(f"a {self.transport} target needs a url")
        if self.timeout <= 0:
            raise ValueError("timeout must be positive")

    @property
    def total_timeout(self) -> float:
        """Hard limit for one whole operation, in seconds."""
        if self.operation_timeout is not None:
            return self.operation_timeout
        return self.timeout * OPERATION_TIMEOUT_FACTOR

    def __repr__(self) -> str:
        # The default dataclass repr would print headers and env (secrets) into logs and tracebacks.
        where = self.url if self.transport != "stdio" else (self.argv[0] if self.argv else "")
        return f"ServerTarget(transport={self.transport!r}, at={where!r}, legacy={self.legacy})"


@dataclass(frozen=True)
class ProbeResult:
    """What `probe` learned: the revision spoken and, for a 2026-07-28 server, its discover result.

    `discover` is the raw wire-form result to cache on the server row (None for a legacy
    server, which has none); `server_info` the server's self-description in wire form, if any.
    """

    protocol_version: str
    legacy: bool
    discover: dict[str, Any] | None
    server_info: dict[str, Any] | None
