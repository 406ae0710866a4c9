"""Webhooks: a finished turn's reply pushed to the channel that posted it (a WhatsApp bridge, a
voice gateway), so integrations need not poll; and, the same way, the notice of a reminder or a
follow-up that fell due (event `reminder.due` or `follow_up.due`, see `notice_payload`).

An API key may carry one callback URL (`ChannelWebhook`). When a turn started by that key ends —
answered or failed — the turn service calls `turn_finished` once the reply is committed; it
queues `webhook_deliver`, which POSTs the JSON below, signed, and is retried with backoff:

    POST <url>
    Content-Type: application/json
    X-Asixto-Event: turn.finished
    X-Asixto-Delivery: <uuid, the same on every attempt: drop a repeat>
    X-Asixto-Attempt: 1
    X-Asixto-Timestamp: <unix seconds>
    X-Asixto-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>." + body)>

A receiver recomputes the signature over the raw body (`verify`), compares in constant time and
rejects old timestamps. The secret is shown once, at creation and at each rotation.

Outbound rules are the MCP servers' (M2): the URL is checked when it is set and again before
every attempt; redirects are never followed; the answer is read up to a cap within a deadline.
A network failure, a timeout, 408, 429 and 5xx are retried after ASIXTO_WEBHOOK_RETRY_DELAYS;
any other answer is final. Every attempt is a `WebhookDelivery` row, its failure kept as a code
and parameters (runtime/webhook_errors.py) that are shown in the reader's language.

Every attempt the receiver saw has its record (issue 19), whatever happens to the sending process
or to PostgreSQL: the record is stored `sending` before the POST (no record, no POST), and the
answer after it, waiting for PostgreSQL if it went away meanwhile (RECORD_WAIT_SECONDS). An
attempt whose answer was never stored (its process killed) becomes `interrupted` when another task
takes the delivery up; that one sends the next attempt number. Unlike tool calls (tools/gateway/
journal.py), nothing is written to a local file first: a webhook is sent off the turn's path, and
it cannot be claimed without PostgreSQL anyway.
"""

import hashlib
import hmac
import json
import logging
import secrets
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from functools import cache

import httpx
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from asixto import metrics
from asixto.errors import ApplicationError
from runtime import webhook_errors as errors
from runtime.builtins.followups import zone_of
from runtime.builtins.models import FollowUp, Reminder
from runtime.models import ChannelWebhook, Message, Turn, WebhookDelivery, WebhookOutbox
from tenants.models import ApiKey
from tools.mcp.errors import parse_retry_after
from tenants.outbound import OutboundRefused, check_url, refusal_of
from tenants.outbound_http import outbound_client, total_deadline

log = logging.getLogger(__name__)

EVENT = "turn.finished"
SECRET_PREFIX = "whsec_"
MAX_ANSWER_BYTES = 16 * 1024  # of the receiver's answer: only its status matters
MAX_RETRY_AFTER = 3600.0
RETRYABLE_STATUSES = {408, 429}
MAX_ROTATIONS_FOLLOWED = 20  # a key's chain of replacements, read one key at a time
# A task sending an owed delivery holds it for ASIXTO_WEBHOOK_TIMEOUT (which bounds the whole POST)
# plus this, from its claim and again from the moment the attempt is stored `sending`: the name
# lookup before the POST (at most 5 s) and a slow moment of a loaded process fit in it. A task killed
# mid-attempt leaves the delivery to the sweep after that (it was 60 s beyond the timeout).
HOLD_MARGIN_SECONDS = 15
# What the receiver answered is stored even if PostgreSQL went away meanwhile: tried for this long.
RECORD_WAIT_SECONDS = 120
# The webhook HTTP client: pooled, thread-safe, no cookies, never following a redirect (which would
# skip the outbound check), connecting only to addresses the outbound rules checked at connect time
# (M2: a name that rebinds to a private address after the check is refused).
_client = outbound_client(
    purpose="webhook",
    limits=httpx.Limits(max_connections=200, max_keepalive_connections=20), headers={"User-Agent": "asixto-webhooks/1"}
)


# ---------------------------------------------------------------- signing (pure)

def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def sign(*, secret: str, timestamp: int, body: bytes) -> str:
    """The `X-Asixto-Signature` value: HMAC-SHA256 over "<timestamp>." + body."""
    digest = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"v1={digest}"


def verify(*, secret: str, timestamp: str, body: bytes, signature: str, tolerance: float = 300, now: float | None = None) -> bool:
    """What a receiver does: the signature matches and the timestamp is recent (no replays)."""
    if not (isinstance(timestamp, str) and timestamp.isascii() and timestamp.isdigit()):
        return False  # "²" is a digit to str.isdigit, and not a number to int
    if abs((time.time() if now is None else now) - int(timestamp)) > tolerance:
        return False
    return hmac.compare_digest(sign(secret=secret, timestamp=int(timestamp), body=body), signature)


# ---------------------------------------------------------------- retry policy (pure)

def is_retryable(status_code: int | None) -> bool:
    """No answer at all (refused, reset, timeout), 408, 429 and 5xx may pass; anything else will
    not change by sending the same thing again."""
    return status_code is None or status_code in RETRYABLE_STATUSES or status_code >= 500


def retry_delay(*, attempt: int, status_code: int | None, retry_after: float | None = None,
                delays: list[float] | None = None) -> float | None:
    """Seconds before the next attempt after a failed `attempt` (1-based), or None: final."""
    delays = settings.ASIXTO_WEBHOOK_RETRY_DELAYS if delays is None else delays
    if not is_retryable(status_code) or attempt > len(delays):
        return None
    delay = delays[attempt - 1]
    if retry_after is not None:  # the receiver said when; bounded, never sooner than planned
        delay = max(delay, min(retry_after, MAX_RETRY_AFTER))
    return delay


# ---------------------------------------------------------------- managing webhooks (services)

def check_callback_url(url: str) -> None:
    """M2 at the time the URL is set: an ApplicationError naming the `url` field if refused."""
    try:
        check_url(url, purpose="webhook")
    except OutboundRefused as exc:
        raise ApplicationError(exc.message, fields={"url": [exc.message]}) from exc


def tenant_keys(*, tenant_id):
    """The tenant's active API keys that may carry a webhook (ApiKey is in the public schema:
    the tenant filter is the isolation here)."""
    return ApiKey.objects.usable().filter(tenant_id=tenant_id).exclude(scope=ApiKey.Scope.OPERATOR)


def webhook_create(*, api_key: ApiKey, url: str) -> tuple[ChannelWebhook, str]:
    """A webhook for `api_key`; returns it and its secret (shown this once). A key in its rotation's
    grace gets none: its replies already go to the webhook of the key that replaced it."""
    check_callback_url(url)
    if api_key.replaced_by_id is not None:
        raise ApplicationError(_("This key was rotated: set the webhook with the key that replaced it."),
                               code="key_rotated", status_code=409)
    if ChannelWebhook.objects.filter(api_key_id=api_key.pk).exists():
        raise ApplicationError(_("This key already has a webhook: change its URL instead."),
                               code="conflict", fields={"api_key": [_("This key already has a webhook.")]})
    secret = new_secret()
    webhook = ChannelWebhook.objects.create(api_key_id=api_key.pk, api_key_prefix=api_key.prefix, url=url, secret=secret)
    return webhook, secret


def webhook_update(*, webhook: ChannelWebhook, data: dict) -> ChannelWebhook:
    if "url" in data:
        check_callback_url(data["url"])
    for name in ("url", "enabled"):
        if name in data:
            setattr(webhook, name, data[name])
    webhook.save()
    return webhook


def webhook_rotate_secret(*, webhook: ChannelWebhook) -> str:
    """A new secret, effective for the next attempt; the old one stops signing at once."""
    secret = new_secret()
    webhook.secret = secret
    webhook.secret_rotated_at = timezone.now()
    webhook.save(update_fields=["secret", "secret_rotated_at", "updated_at"])
    return secret


# ---------------------------------------------------------------- queueing

@cache
def _webhook_sql() -> str:
    quote = connection.ops.quote_name
    key = {name: quote(ApiKey._meta.get_field(name).column) for name in ("id", "replaced_by", "revoked_at", "expires_at")}
    hook = {name: quote(ChannelWebhook._meta.get_field(name).column) for name in ("id", "api_key_id", "enabled")}
    keys, hooks = quote(ApiKey._meta.db_table), quote(ChannelWebhook._meta.db_table)
    return (
        # The key and the keys that replaced it, one after the other, each once, at most %s of them.
        f"WITH RECURSIVE chain(id, depth, path) AS (SELECT %s::uuid, 1, ARRAY[%s::uuid] UNION ALL "
        f"SELECT k.{key['replaced_by']}, c.depth + 1, c.path || k.{key['replaced_by']} FROM chain c "
        f"JOIN {keys} k ON k.{key['id']} = c.id WHERE k.{key['replaced_by']} IS NOT NULL "
        f"AND NOT k.{key['replaced_by']} = ANY(c.path) AND c.depth < %s) "
        # The newest usable one that holds an enabled webhook.
        f"SELECT w.{hook['id']} FROM chain c JOIN {keys} k ON k.{key['id']} = c.id JOIN {hooks} w ON w.{hook['api_key_id']} = c.id "
        f"WHERE w.{hook['enabled']} AND k.{key['revoked_at']} IS NULL AND (k.{key['expires_at']} IS NULL OR k.{key['expires_at']} > %s) "
        f"ORDER BY c.depth DESC LIMIT 1"
    )


def _webhook_for(api_key_id):
    """The id of the enabled webhook of the integration that posted with `api_key_id`: the webhook
    moves with each rotation to the key that replaced the old one (issue 20), so the chain of
    replacements is followed to the key that holds it now, which must be usable. A turn running,
    or a reminder pending, while its key was rotated is still delivered; a revoked or expired key
    that nothing replaced gets nothing more. One statement written once (every turn's end reads
    it, P4): the chain is followed in SQL, at most MAX_ROTATIONS_FOLLOWED keys."""
    if api_key_id is None:
        return None
    api_key_id = uuid.UUID(str(api_key_id))  # given as text by some callers
    with connection.cursor() as cursor:
        cursor.execute(_webhook_sql(), [api_key_id, api_key_id, MAX_ROTATIONS_FOLLOWED, timezone.now()])
        row = cursor.fetchone()
    return row[0] if row else None


def webhook_follow_rotation(*, old: ApiKey, new: ApiKey) -> None:
    """A rotated key's webhook moves to the key that replaced it (issue 20)."""
    ChannelWebhook.objects.filter(api_key_id=old.pk).update(api_key_id=new.pk, api_key_prefix=new.prefix)


def outbox_row(*, api_key_id, turn_id=None, message_id=None) -> tuple | None:
    """The outbox row (model, values) that owes the posting key's enabled webhook this turn's
    reply or this notice, for the caller to write in the transaction that stores it; None when
    the key has no enabled webhook."""
    webhook_id = _webhook_for(api_key_id)
    if webhook_id is None:
        return None
    return WebhookOutbox, {"id": uuid.uuid4(), "webhook_id": webhook_id, "turn_id": turn_id, "message_id": message_id,
                           "due_at": timezone.now()}


def outbox_queue(outbox_id) -> None:
    """Queue the sending of an outbox row (call once its transaction committed; robust: when the
    broker is down the sweep sends it)."""
    from runtime.tasks import webhook_send  # the tasks module imports the turn service

    webhook_send.delay(str(outbox_id))


@dataclass(frozen=True)
class Claim:
    """A task's hold on an owed delivery: the outbox row and the token it wrote there."""

    outbox_id: uuid.UUID
    token: str


def _hold_until():
    return timezone.now() + timedelta(seconds=settings.ASIXTO_WEBHOOK_TIMEOUT + HOLD_MARGIN_SECONDS)


def outbox_send(outbox_id) -> float | None:
    """The task's work: claim the row if it is due and nobody holds it, make its attempt, and book
    the next one (or end it). Returns the seconds until the next attempt, or None.

    Attempts of this delivery still `sending` were cut short (their task lost its hold): they
    become `interrupted`, and count among the attempts allowed."""
    now, token = timezone.now(), uuid.uuid4().hex
    owed = Q(done_at__isnull=True, due_at__lte=now + timedelta(seconds=1)) & (Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
    if not WebhookOutbox.objects.filter(owed, pk=outbox_id).update(claimed_until=_hold_until(), claimed_by=token):
        return None  # sent, not due yet, or another task holds it
    row = WebhookOutbox.objects.get(pk=outbox_id)
    claim = Claim(row.pk, token)
    WebhookDelivery.objects.filter(delivery_id=row.pk, outcome=WebhookDelivery.Outcome.SENDING).update(
        outcome=WebhookDelivery.Outcome.INTERRUPTED)
    delay = None
    if row.attempt <= len(settings.ASIXTO_WEBHOOK_RETRY_DELAYS) + 1:
        delay = deliver(webhook_id=row.webhook_id, delivery_id=str(row.pk), attempt=row.attempt, turn_id=row.turn_id,
                        message_id=row.message_id, claim=claim)
    booked = {"done_at": timezone.now()} if delay is None else {"due_at": timezone.now() + timedelta(seconds=delay)}
    # Only while the hold is this task's: a task that lost it (it took too long) leaves the row to the one that has it.
    _patiently(lambda: WebhookOutbox.objects.filter(pk=row.pk, claimed_by=claim.token).update(
        **booked, claimed_until=None, claimed_by=""))
    return delay


def outbox_due(*, grace_seconds: float = 15, limit: int = 500) -> list:
    """Rows due for a while that no task holds: their task was lost (a broker or Redis outage, a
    worker killed after the commit). The sweep queues them again."""
    now = timezone.now()
    return list(WebhookOutbox.objects.filter(done_at__isnull=True, due_at__lt=now - timedelta(seconds=grace_seconds))
                .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)).order_by("due_at")
                .values_list("pk", flat=True)[:limit])


# ---------------------------------------------------------------- what is sent

def _channel(conversation) -> dict:
    return {"conversation_id": str(conversation.pk), "channel_kind": conversation.channel_kind,
            "channel_name": conversation.channel_name, "customer_ref": conversation.customer_ref,
            "language": conversation.language}


def payload(*, turn: Turn, delivery_id: str) -> dict:
    """What the receiver gets: enough to answer the customer without another request."""
    return {
        "event": EVENT,
        "delivery_id": delivery_id,
        "turn_id": str(turn.pk),
        **_channel(turn.conversation),
        "status": turn.status,
        "reply": turn.reply.text if turn.reply_id else "",
        "error": turn.error_code or None,
        "message": {"id": str(turn.message_id), "external_id": turn.message.external_id},
        "created_at": turn.created_at.isoformat(),
        "started_at": turn.started_at.isoformat() if turn.started_at else None,
        "finished_at": turn.finished_at.isoformat() if turn.finished_at else None,
        "turn_url": reverse("api:turn-detail", args=[turn.pk]),
    }


def scheduled_item(message: Message):
    """The reminder or follow-up whose notice `message` is, or None."""
    for model in (Reminder, FollowUp):
        item = model.objects.filter(notice=message).first()
        if item is not None:
            return item
    return None


def notice_payload(*, message: Message, item, delivery_id: str) -> dict:
    """A reminder or follow-up that fell due: the notice's text (in the conversation's language,
    the time in its timezone) to pass on to the customer, and the item it came from."""
    zone = zone_of(message.conversation.timezone)
    return {
        "event": item.EVENT,
        "delivery_id": delivery_id,
        **_channel(message.conversation),
        "message": {"id": str(message.pk), "role": message.role, "text": message.text,
                    "created_at": message.created_at.isoformat()},
        "scheduled": {"id": str(item.pk), "kind": "reminder" if isinstance(item, Reminder) else "follow_up",
                      "text": item.subject, "due_at": item.due_at.isoformat(),
                      "due_at_local": timezone.localtime(item.due_at, zone).isoformat(), "timezone": str(zone)},
        "turn_id": str(item.turn_id) if item.turn_id else None,
    }


@dataclass(frozen=True)
class Answer:
    status_code: int
    retry_after: float | None
    location: str


def _post(url: str, body: bytes, headers: dict, deadline: float) -> Answer:
    """One POST, over within `deadline` seconds however the receiver paces its bytes (every network
    wait gets at most the time left: the sending task's hold counts on it). The receiver's answer
    is read up to MAX_ANSWER_BYTES and within the deadline, then dropped: a receiver that streams
    forever or sends gigabytes costs nothing."""
    started = time.monotonic()
    timeout = httpx.Timeout(deadline, connect=min(deadline, 5.0))
    with total_deadline(started + deadline), _client.stream("POST", url, content=body, headers=headers,
                                                            timeout=timeout) as response:
        size = 0
        try:
            for chunk in response.iter_raw():
                size += len(chunk)
                if size >= MAX_ANSWER_BYTES or time.monotonic() - started > deadline:
                    break
        except httpx.TimeoutException:
            pass  # the deadline came during the body: the status was the answer
        return Answer(response.status_code, parse_retry_after(response.headers.get("retry-after")),
                      response.headers.get("location", "")[:200])


# ---------------------------------------------------------------- delivering

def deliver(*, webhook_id, delivery_id: str, attempt: int, turn_id=None, message_id=None,
            claim: Claim | None = None) -> float | None:
    """One attempt of a finished turn (`turn_id`) or of a notice (`message_id`), recorded.
    Returns the seconds to wait before the next attempt, or None when this one was final
    (delivered, refused, a final answer, attempts used up, webhook or subject gone) or not made
    (the outbox `claim` was lost: its new holder sends it)."""
    webhook = ChannelWebhook.objects.filter(pk=webhook_id).first()
    if webhook is None or not webhook.enabled:
        return None  # deleted or switched off meanwhile: nothing to send, nothing to record
    if turn_id is not None:
        turn = Turn.objects.select_related("conversation", "message", "reply").filter(pk=turn_id).first()
        if turn is None:
            return None
        body, subject = payload(turn=turn, delivery_id=delivery_id), {"turn": turn}
    else:
        message = Message.objects.select_related("conversation").filter(pk=message_id).first()
        item = scheduled_item(message) if message is not None else None
        if item is None:
            return None
        body = notice_payload(message=message, item=item, delivery_id=delivery_id)
        subject = {"message": message, "turn_id": item.turn_id}
    record = {"webhook": webhook, "delivery_id": delivery_id, "attempt": attempt, "url": webhook.url,
              "event": body["event"], **subject}
    return _attempt(webhook, record, json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode(), claim)


def _attempt(webhook: ChannelWebhook, record: dict, body: bytes, claim: Claim | None) -> float | None:
    stamp = int(time.time())
    headers = {
        "Content-Type": "application/json", "X-Asixto-Event": record["event"], "X-Asixto-Delivery": record["delivery_id"],
        "X-Asixto-Attempt": str(record["attempt"]), "X-Asixto-Timestamp": str(stamp),
        "X-Asixto-Signature": sign(secret=webhook.secret, timestamp=stamp, body=body),
    }
    started = time.monotonic()
    status_code, retry_after, error = None, None, ("", {})
    try:
        check_url(webhook.url, purpose="webhook")  # again before each attempt: DNS answers change (M2)
    except OutboundRefused as exc:
        _record(record, WebhookDelivery.Outcome.REFUSED, None, (errors.REFUSED, errors.refused_params(exc)), started)
        return None
    if not _sending(record, claim):
        return None
    if not connection.in_atomic_block:
        connection.close()  # hold no database connection while the receiver takes its time (P4)
    try:
        answer = _post(webhook.url, body, headers, settings.ASIXTO_WEBHOOK_TIMEOUT)
        status_code, retry_after = answer.status_code, answer.retry_after
        if 300 <= status_code < 400:
            error = (errors.REDIRECT, {"location": answer.location or "?"})
        elif status_code >= 400:
            error = (errors.HTTP_STATUS, {"status": status_code})
    except httpx.TimeoutException:
        error = (errors.TIMEOUT, {"seconds": f"{settings.ASIXTO_WEBHOOK_TIMEOUT:g}"})
    except httpx.HTTPError as exc:  # refused, reset, a TLS certificate that does not verify
        refused = refusal_of(exc)
        if refused is not None:  # the name now resolves somewhere the rules refuse: final, not retried
            _record(record, WebhookDelivery.Outcome.REFUSED, None, (errors.REFUSED, errors.refused_params(refused)),
                    started)
            return None
        error = (errors.CONNECTION_FAILED, {"reason": type(exc).__name__})
    if status_code is not None and 200 <= status_code < 300:
        _record(record, WebhookDelivery.Outcome.DELIVERED, status_code, ("", {}), started)
        return None
    delay = None if status_code is not None and status_code < 400 else retry_delay(
        attempt=record["attempt"], status_code=status_code, retry_after=retry_after)
    outcome = WebhookDelivery.Outcome.FAILED if delay is None else WebhookDelivery.Outcome.RETRYING
    _record(record, outcome, status_code, error, started)
    return delay


def _sending(record: dict, claim: Claim | None) -> bool:
    """Before the POST: the attempt's record, `sending`, and with an outbox `claim` the next
    attempt's number and a renewed hold (the POST gets all of it), in one transaction, only while
    the hold is this task's. False, and nothing is sent, when another task took the delivery over."""
    with transaction.atomic():
        if claim is not None and not WebhookOutbox.objects.filter(pk=claim.outbox_id, claimed_by=claim.token).update(
                attempt=record["attempt"] + 1, claimed_until=_hold_until()):
            return False
        _store(record, WebhookDelivery.Outcome.SENDING, None, ("", {}), 0.0)
    return True


def _record(record: dict, outcome: str, status_code: int | None, error: tuple[str, dict], started: float) -> None:
    """The attempt's outcome, stored even if PostgreSQL went away during the POST."""
    duration_ms = (time.monotonic() - started) * 1000
    _patiently(lambda: _store(record, outcome, status_code, error, duration_ms))
    metrics.webhook_attempted(outcome=outcome, final=outcome != WebhookDelivery.Outcome.RETRYING)


def _store(record: dict, outcome: str, status_code: int | None, error: tuple[str, dict], duration_ms: float) -> None:
    with transaction.atomic():
        WebhookDelivery.objects.update_or_create(
            delivery_id=record["delivery_id"], attempt=record["attempt"],
            defaults={**record, "outcome": outcome, "status_code": status_code, "error_code": error[0],
                      "error_params": error[1], "duration_ms": duration_ms},
        )


def _patiently(write):
    """`write()`, a write after the receiver answered; while PostgreSQL cannot be reached, again,
    for up to RECORD_WAIT_SECONDS (then the error is the task's, and the delivery is taken up again
    once its hold runs out)."""
    until, pause = time.monotonic() + RECORD_WAIT_SECONDS, 0.25
    while True:
        try:
            return write()
        except (OperationalError, InterfaceError) as exc:
            if connection.in_atomic_block or time.monotonic() > until:
                raise
            if pause == 0.25:
                log.warning("webhook attempt: the database cannot be reached (%s: %s); storing it when it answers",
                            type(exc).__name__, exc)
            connection.close()  # a broken connection is not reused
            time.sleep(pause)
            pause = min(pause * 2, 5.0)
