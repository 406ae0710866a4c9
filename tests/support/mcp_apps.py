"""ASGI apps for connection tests, to serve with `serve_asgi`: SDK servers and misbehaving peers.

- `streamable_app(server)`: an SDK server as stateless streamable HTTP (2026-07-28 and legacy).
- `legacy_http_app(server)`: the same server stateful, behind the check an SDK 1.x server makes:
  any `MCP-Protocol-Version` it does not know gets 400 / -32600, so only the `initialize`
  handshake reaches it (a real legacy peer, as far as the client can tell).
- `sse_app(server)`: the deprecated HTTP+SSE transport (`GET /sse`, `POST /messages/`).
- `recording(app, log)`: records each request's method, path, Mcp-Method and Authorization.
- `require_bearer(app, token)`: 401 for any request without the token.
- `scripted_app(results)`: answers each method with a fixed result, valid MCP or not.
- `status_app(status, headers)`: answers every request with that status and a plain-text body.
- `hanging_app()`: accepts requests and never answers.
- `dropping_app()`: starts an answer, then drops the connection halfway through the body.
- `self_signed_cert(directory)`: a certificate for 127.0.0.1 that no CA vouches for.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
from pathlib import Path
from typing import Any

import anyio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp.server import Server
from mcp.server.sse import SseServerTransport
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_HOST = "127.0.0.1"


def streamable_app(server: Server[Any], *, json_response: bool = True) -> Starlette:
    return server.streamable_http_app(stateless_http=True, json_response=json_response, host=LOOPBACK_HOST)


def legacy_http_app(server: Server[Any]) -> ASGIApp:
    inner = server.streamable_http_app(stateless_http=False, json_response=True, host=LOOPBACK_HOST)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            version = _header(scope, b"mcp-protocol-version")
            if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
                # What SDK 1.x answers to a revision it does not know (streamable_http.py there).
                body = {
                    "jsonrpc": "2.0",
                    "id": "server-error",
                    "error": {"code": -32600, "message": f"Bad Request: Unsupported protocol version: {version}"},
                }
                await _send_json(send, 400, body)
                return
        await inner(scope, receive, send)

    return app


def sse_app(server: Server[Any]) -> Starlette:
    transport = SseServerTransport("/messages/")

    async def handle_sse(request: Request) -> Response:
        async with transport.connect_sse(request.scope, request.receive, request._send) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return Response()

    return Starlette(
        routes=[
            Route("/sse", endpoint=handle_sse, methods=["GET"]),
            Mount("/messages/", app=transport.handle_post_message),
        ]
    )


def recording(app: ASGIApp, log: list[dict[str, str | None]]) -> ASGIApp:
    """`app`, appending each HTTP request's method, path, Mcp-Method and Authorization to `log`."""

    async def recorded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            log.append(
                {
                    "method": scope["method"],
                    "path": scope["path"],
                    "mcp_method": _header(scope, b"mcp-method"),
                    "authorization": _header(scope, b"authorization"),
                }
            )
        await app(scope, receive, send)

    return recorded


def require_bearer(app: ASGIApp, token: str) -> ASGIApp:
    """`app` behind a bearer token: any request without it gets 401."""

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _header(scope, b"authorization") != f"Bearer {token}":
            await _send_text(send, 401, "missing or wrong token", {"www-authenticate": "Bearer"})
            return
        await app(scope, receive, send)

    return guarded


def scripted_app(results: dict[str, Any]) -> ASGIApp:
    """Answers each JSON-RPC request with `results[method]` as its result, whatever it holds:
    for peers that send what no SDK server would (invalid tools, looping cursors, ...).
    A list value is served one item per request, the last one repeating."""
    served: dict[str, int] = {}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _serve_lifespan(receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body)
        if "id" not in request:
            await _send_text(send, 202, "", {})
            return
        script = results[request["method"]]
        if isinstance(script, list):
            index = served.get(request["method"], 0)
            served[request["method"]] = index + 1
            script = script[min(index, len(script) - 1)]
        await _send_json(send, 200, {"jsonrpc": "2.0", "id": request["id"], "result": script})

    return app


def status_app(status: int, headers: dict[str, str] | None = None, body: str = "not available") -> ASGIApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _serve_lifespan(receive, send)
            return
        await _send_text(send, status, body, headers or {})

    return app


def hanging_app() -> ASGIApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _serve_lifespan(receive, send)
            return
        await anyio.sleep_forever()  # cancelled when serve_asgi shuts the server down

    return app


def dropping_app() -> ASGIApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _serve_lifespan(receive, send)
            return
        headers = [(b"content-type", b"application/json"), (b"content-length", b"4096")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b'{"jsonrpc": "2.0", ', "more_body": True})
        # Raising mid-body makes uvicorn close the connection: the client sees a truncated answer.
        raise RuntimeError("simulated crash halfway through an answer")

    return app


def self_signed_cert(directory: Path) -> tuple[str, str]:
    """Write a self-signed certificate and key for 127.0.0.1; return (certfile, keyfile)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, LOOPBACK_HOST)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(LOOPBACK_HOST))]), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = directory / "cert.pem", directory / "key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(certfile), str(keyfile)


def _header(scope: Scope, name: bytes) -> str | None:
    return next((value.decode("latin-1") for key, value in scope["headers"] if key == name), None)


async def _serve_lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _send_text(send: Send, status: int, text: str, headers: dict[str, str]) -> None:
    raw_headers = [(b"content-type", b"text/plain")] + [(k.encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": text.encode()})


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})
