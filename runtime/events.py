"""Status events of a turn (R9) and the server-sent event stream that carries them, then the reply.

Events are rows (`TurnEvent`), so a stream opened late, or resumed with `Last-Event-ID`, reads
everything from the database. Redis pub/sub only wakes streams up sooner: a lost publish costs
latency (the stream re-reads every POLL_SECONDS), never an event. A stream ends after the reply,
or after `ASIXTO_EVENT_STREAM_SECONDS` with an `timeout` event (the client reconnects with
`Last-Event-ID`); a stream resumed after a finished turn's last event ends at once. Between reads the stream holds no database connection.

Two generators with the same behaviour: a sync one for WSGI servers (gunicorn gthread) and an
async one for ASGI servers (uvicorn), where waiting costs no thread.
"""

import asyncio
import json
import logging
import re
import time

import redis
import redis.asyncio as aioredis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection, transaction
from django.utils import translation
from django.utils.translation import gettext as _
from django_tenants.utils import schema_context

from runtime.models import TurnEvent

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
HEARTBEAT_SECONDS = 15.0
MIN_READ_INTERVAL = 0.05
_client: redis.Redis | None = None


# ---------------------------------------------------------------- status texts (R9)

_ES_IRREGULAR = {
    "ir": "yendo", "leer": "leyendo", "traer": "trayendo", "caer": "cayendo", "oír": "oyendo", "creer": "creyendo",
    "decir": "diciendo", "pedir": "pidiendo", "servir": "sirviendo", "seguir": "siguiendo", "sentir": "sintiendo",
    "venir": "viniendo", "repetir": "repitiendo", "elegir": "eligiendo", "corregir": "corrigiendo",
    "medir": "midiendo", "dormir": "durmiendo", "morir": "muriendo", "poder": "pudiendo", "reír": "riendo",
    "conseguir": "consiguiendo", "advertir": "advirtiendo", "preferir": "prefiriendo", "sugerir": "sugiriendo",
    "convertir": "convirtiendo", "invertir": "invirtiendo", "divertir": "divirtiendo", "despedir": "despidiendo",
    "impedir": "impidiendo", "competir": "compitiendo", "reñir": "riñendo", "construir": "construyendo",
    "destruir": "destruyendo", "incluir": "incluyendo", "excluir": "excluyendo", "distribuir": "distribuyendo",
    "concluir": "concluyendo", "contribuir": "contribuyendo", "atribuir": "atribuyendo", "huir": "huyendo",
}
_ES_ARTICLES = {"un": "el", "una": "la", "unos": "los", "unas": "las"}
_EN_ARTICLES = {"a": "the", "an": "the"}
_WORD = re.compile(r"^[^\W\d_]+$")


def _es_gerund(verb: str) -> str | None:
    word = verb.lower()
    pronoun = ""
    if len(word) > 4 and word.endswith("se") and word[-4:-2] in ("ar", "er", "ir", "ír"):
        word, pronoun = word[:-2], "se"
    if word in _ES_IRREGULAR:
        gerund = _ES_IRREGULAR[word]
    elif word.endswith("ar") and len(word) > 2:
        gerund = word[:-2] + "ando"
    elif word.endswith(("er", "ir")) and len(word) > 2:
        stem = word[:-2]
        gerund = stem + ("yendo" if stem[-1] in "aeiou" else "iendo")
    else:
        return None
    if pronoun:
        # The stress mark keeps the pronunciation once the pronoun is attached: registrándose.
        for plain, stressed in (("ando", "ándo"), ("iendo", "iéndo"), ("yendo", "yéndo")):
            if gerund.endswith(plain):
                gerund = gerund[: -len(plain)] + stressed
                break
        gerund += pronoun
    return gerund


def _en_gerund(verb: str) -> str | None:
    word = verb.lower()
    if len(word) < 2:
        return None
    vowels = "aeiou"
    if word.endswith("ie"):
        return word[:-2] + "ying"
    if word.endswith("e") and not word.endswith(("ee", "ye", "oe")):
        return word[:-1] + "ing"
    single_vowel = sum(ch in vowels for ch in word) == 1
    if single_vowel and len(word) >= 3 and word[-1] not in vowels + "wxy" and word[-2] in vowels and word[-3] not in vowels:
        return word + word[-1] + "ing"
    return word + "ing"


def status_text(*, verb: str, verb_language: str, language: str) -> str:
    """"Consultando el caso de soporte…" from the tool's `com.asixto/verb` ("consultar un caso de
    soporte"), when the verb is written in the conversation's language; a translated general
    status otherwise (a verb in another language is not shown to the customer)."""
    words = (verb or "").strip().rstrip(".").split()
    primary = (language or "").split("-")[0].lower()
    if words and _WORD.match(words[0]) and primary == (verb_language or "").split("-")[0].lower():
        gerund = {"es": _es_gerund, "en": _en_gerund}.get(primary, lambda word: None)(words[0])
        if gerund:
            articles = _ES_ARTICLES if primary == "es" else _EN_ARTICLES
            rest = words[1:]
            if rest and rest[0].lower() in articles:
                rest = [articles[rest[0].lower()], *rest[1:]]
            text = " ".join([gerund, *rest])
            return text[:1].upper() + text[1:] + "…"
    with translation.override(language or settings.LANGUAGE_CODE):
        return _("Checking our systems…")


# ---------------------------------------------------------------- recording and publishing

def channel_name(turn_id) -> str:
    return f"asixto:turn-events:{turn_id}"


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=5)
    return _client


def publish(turn_id):
    """Wake the turn's open streams. Best effort: they re-read the database anyway."""
    try:
        _redis().publish(channel_name(turn_id), "1")
    except redis.RedisError as exc:
        log.warning("could not publish a turn event: %s", exc)


def event_add(*, turn_id, kind: str, text: str, data: dict | None = None) -> TurnEvent:
    """Store one event and wake the streams once it is committed. Called by the turn service."""
    event = TurnEvent.objects.create(turn_id=turn_id, kind=kind, text=text, data=data or {})
    transaction.on_commit(lambda: publish(turn_id))
    return event


# ---------------------------------------------------------------- the stream

ENDED = [{"kind": "ended"}]  # what _load gives when the turn's reply was at or before `after`


def _load(schema: str, turn_id, after: int) -> list[dict]:
    """The turn's events after `after`; ENDED when there are none and its reply came already (a
    client resuming past the end, even with a made-up Last-Event-ID, gets no open stream)."""
    with schema_context(schema):
        try:
            events = list(
                TurnEvent.objects.filter(turn_id=turn_id, id__gt=after).order_by("id").values("id", "kind", "text", "data")
            )
            if not events and TurnEvent.objects.filter(turn_id=turn_id, kind=TurnEvent.Kind.REPLY).exists():
                return ENDED
            return events
        finally:
            # A stream is open for minutes: hold no connection (or pool slot) between reads.
            if not connection.in_atomic_block:
                connection.close()


def encode(event: dict) -> bytes:
    payload = {"text": event["text"], **event["data"]}
    return f"id: {event['id']}\nevent: {event['kind']}\ndata: {json.dumps(payload)}\n\n".encode()


TIMEOUT_EVENT = b"event: timeout\ndata: {}\n\n"
HEARTBEAT = b": keep-alive\n\n"
PREAMBLE = b": stream open\n\n"  # a comment: sends the headers at once, and no parser makes an event of it


def stream(*, schema: str, turn_id, after: int = 0, max_seconds: float | None = None):
    """The turn's events as SSE bytes, for WSGI servers."""
    max_seconds = settings.ASIXTO_EVENT_STREAM_SECONDS if max_seconds is None else max_seconds
    deadline = time.monotonic() + max_seconds
    pubsub = None
    try:
        pubsub = _redis().pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(channel_name(turn_id))  # before the first read, so no event slips between
    except redis.RedisError as exc:
        log.warning("event stream without Redis wake-ups: %s", exc)
        pubsub = None
    try:
        yield PREAMBLE
        last_write = time.monotonic()
        while True:
            for event in _load(schema, turn_id, after):
                if event is ENDED[0]:
                    return
                after = event["id"]
                yield encode(event)
                last_write = time.monotonic()
                if event["kind"] == TurnEvent.Kind.REPLY:
                    return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                yield TIMEOUT_EVENT
                return
            if time.monotonic() - last_write >= HEARTBEAT_SECONDS:
                yield HEARTBEAT  # also how a WSGI server notices a client that left
                last_write = time.monotonic()
            wait = min(POLL_SECONDS, remaining)
            if pubsub is not None:
                try:
                    started = time.monotonic()
                    pubsub.get_message(timeout=wait)
                    # A wake-up, or a subscription notice that returns at once: never spin on the database.
                    time.sleep(max(0.0, MIN_READ_INTERVAL - (time.monotonic() - started)))
                    continue
                except redis.RedisError:
                    pubsub = None
            time.sleep(wait)
    finally:
        if pubsub is not None:
            try:
                pubsub.close()
            except redis.RedisError:
                pass


async def astream(*, schema: str, turn_id, after: int = 0, max_seconds: float | None = None):
    """The same stream for ASGI servers: waiting costs no thread."""
    max_seconds = settings.ASIXTO_EVENT_STREAM_SECONDS if max_seconds is None else max_seconds
    deadline = time.monotonic() + max_seconds
    load = sync_to_async(_load)
    client = aioredis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=5)
    pubsub = client.pubsub(ignore_subscribe_messages=True)
    try:
        try:
            await pubsub.subscribe(channel_name(turn_id))
        except redis.RedisError as exc:
            log.warning("event stream without Redis wake-ups: %s", exc)
            pubsub = None
        yield PREAMBLE
        last_write = time.monotonic()
        while True:
            for event in await load(schema, turn_id, after):
                if event is ENDED[0]:
                    return
                after = event["id"]
                yield encode(event)
                last_write = time.monotonic()
                if event["kind"] == TurnEvent.Kind.REPLY:
                    return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                yield TIMEOUT_EVENT
                return
            if time.monotonic() - last_write >= HEARTBEAT_SECONDS:
                yield HEARTBEAT
                last_write = time.monotonic()
            wait = min(POLL_SECONDS, remaining)
            if pubsub is not None:
                try:
                    started = time.monotonic()
                    await pubsub.get_message(timeout=wait)
                    await asyncio.sleep(max(0.0, MIN_READ_INTERVAL - (time.monotonic() - started)))
                    continue
                except redis.RedisError:
                    pubsub = None
            await asyncio.sleep(wait)
    finally:
        try:
            if pubsub is not None:
                await pubsub.aclose()
            await client.aclose()
        except (redis.RedisError, RuntimeError):
            pass


def stream_response(request, *, turn_id, key_id=None):
    """The turn's event stream as a response, for the channel API and the dashboard alike: resumed
    after `Last-Event-ID` (or `?after=`; anything but ASCII digits reads as 0), in a stream slot
    (runtime/stream_slots.py, StreamsFull when none is free) given back when the response closes."""
    from django.core.handlers.asgi import ASGIRequest
    from django.http import StreamingHttpResponse

    from runtime.stream_slots import open_slot

    django_request = getattr(request, "_request", request)
    after = request.headers.get("Last-Event-ID") or django_request.GET.get("after") or "0"
    after = int(after) if after.isascii() and after.isdigit() and len(after) < 19 else 0
    asgi = isinstance(django_request, ASGIRequest)
    release = open_slot(schema=connection.schema_name, key_id=key_id, threaded=not asgi)
    try:
        response = StreamingHttpResponse((astream if asgi else stream)(schema=connection.schema_name, turn_id=turn_id, after=after),
                                         content_type="text/event-stream")
    except BaseException:
        release()
        raise
    response._resource_closers.append(release)
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # proxies must pass events on at once
    return response
