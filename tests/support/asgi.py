"""The two chores every hand-written ASGI test double does: answer the server's lifespan
messages, and read a request body that may come in several messages."""


async def lifespan(receive, send) -> None:
    """Acknowledge startup and shutdown until the server shuts down."""
    while True:
        message = await receive()
        await send({"type": message["type"] + ".complete"})
        if message["type"] == "lifespan.shutdown":
            return


async def request_body(receive) -> bytes:
    """The whole body of an HTTP request."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body
