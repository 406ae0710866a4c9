"""Shared set-up for runtime tests: a tenant pointed at a scripted model, the example support
server registered and certified, conversations and turns started through the channel service."""

import asyncio
import json
from contextlib import contextmanager

from runtime.channel import conversation_start, message_post
from runtime.models import Turn
from runtime.turn import turn_execute
from tools.services import catalog_sync, server_create

CHANNEL_DEFAULTS = {"channel_kind": "chat", "channel_name": "whatsapp", "customer_ref": "cliente-7", "language": "es",
                    "currency": "COP", "price_list_id": "pl_mayorista", "timezone": "America/Bogota"}


@contextmanager
def tenant_settings(world, **values):
    """Agent settings (T6) for the block. The session's tenant object outlives a test's rollback,
    so what changes on it is put back."""
    before = {name: getattr(world.tenant, name) for name in values}
    for name, value in values.items():
        setattr(world.tenant, name, value)
    world.tenant.save(update_fields=list(values))
    try:
        yield world.tenant
    finally:
        for name, value in before.items():
            setattr(world.tenant, name, value)
        world.tenant.save(update_fields=list(before))


@contextmanager
def agent(world, model_url, **values):
    """The tenant's model endpoint at `model_url` (a ScriptedModel's base URL + /v1)."""
    with tenant_settings(world, model_base_url=model_url, model_name="scripted", model_api_key="sk-test-secret-0042",
                         **values) as tenant:
        yield tenant


def register_soporte(world, url, slug="soporte"):
    """The example support server at `url`, synced and certified: three tools for agents."""
    with world.schema():
        return catalog_sync(server=server_create(data={"slug": slug, "transport": "streamable_http", "url": f"{url}/mcp"}))


def post(world, text, *, conversation=None, external_id="", **conversation_values):
    """A customer message through the channel service, as the world's channel key would post it;
    returns the turn (queued, not run)."""
    with world.schema():
        if conversation is None:
            conversation = conversation_start(data={**CHANNEL_DEFAULTS, **conversation_values},
                                              integration=world.channel_integration)
        return message_post(conversation=conversation, text=text, external_id=external_id).turn


def run(world, turn):
    """Run the turn here, as the worker would, and return it fresh from the database."""
    with world.schema():
        turn_execute(turn_id=turn.pk)
        return Turn.objects.select_related("reply", "conversation").get(pk=turn.pk)


def tool_calls_seen(peer_or_requests):
    """`tools/call` requests a recording MCP app received: (name, arguments, idempotency key)."""
    return [
        (r["params"]["name"], r["params"]["arguments"], r["params"]["_meta"]["com.asixto/idempotencyKey"])
        for r in peer_or_requests if r.get("method") == "tools/call"
    ]


def recording_app(app, log, *, hold_first=0, executed=None, release=None):
    """`app`, keeping each JSON-RPC request body it receives in `log`. With `hold_first=n`, the
    answers to the first n `tools/call` requests are produced (the side effect happens, and
    `executed` is set) but held back until `release` is set, a minute at most: a worker killed
    meanwhile never sees them."""
    held = {"count": 0}

    async def recorded(scope, receive, send):
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            request = json.loads(body)
        except ValueError:
            request = {}
        log.append(request)
        delivered = False

        async def inner_receive():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        hold = request.get("method") == "tools/call" and held["count"] < hold_first
        if not hold:
            await app(scope, inner_receive, send)
            return
        held["count"] += 1
        answer = []

        async def keep(message):
            answer.append(message)

        await app(scope, inner_receive, keep)
        if executed is not None:
            executed.set()
        for _tick in range(6000):
            if release is not None and release.is_set():
                break
            await asyncio.sleep(0.01)
        for message in answer:
            await send(message)

    return recorded


def queued_turn(world, text, **conversation_values):
    """A stored, queued turn that no task was sent for (for tests that run it themselves), in a
    conversation of the world's channel key."""
    from runtime.models import Conversation, Message

    with world.schema():
        conversation = Conversation.objects.create(
            **{**CHANNEL_DEFAULTS, "integration": world.channel_integration, **conversation_values})
        message = Message.objects.create(conversation=conversation, role="customer", text=text)
        return Turn.objects.create(conversation=conversation, message=message)


def run_in_thread(world, turn):
    """Run the turn on another thread (its own database connection), as a worker thread would."""
    import threading

    from django.db import connection

    def target():
        try:
            with world.schema():
                turn_execute(turn_id=turn.pk)
        finally:
            connection.close()

    thread = threading.Thread(target=target, name=f"turn-{turn.pk}", daemon=True)
    thread.start()
    return thread


def wait_until_finished(world, turn_id, timeout=120):
    """The turn once a worker finished it (committed data, read on this thread's connection)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        with world.schema():
            turn = Turn.objects.select_related("reply").get(pk=turn_id)
        if turn.is_finished:
            return turn
        if time.monotonic() > deadline:
            raise AssertionError(f"the turn did not finish: {turn.status}")
        time.sleep(0.1)
