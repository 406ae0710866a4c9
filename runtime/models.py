"""Tenant-schema models of the agent runtime: conversations and their messages, turns with their
steps and status events, truncation logs (R1–R4, R9, R10, A1), and the webhooks that push a
turn's reply to a channel, with every delivery attempt. The built-in tools' models live in
runtime/builtins/models.py and are imported at the end."""

import uuid

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from runtime.turn_errors import SELF_EXPLAINED, turn_error_text
from tenants.crypto import EncryptedTextField

# PostgreSQL text-search configurations of the conversation search (issue 20): copies of the stock
# `spanish` and `english` that stem the same but keep every word, stop words included ("estado",
# "no", "when" are words a support agent searches for). Migration 0011 creates them in each tenant
# schema; a schema cloned from the template gets them from tenants.schema_clone.
SEARCH_CONFIGS = ("spanish_nostop", "english_nostop")

CHANNEL_KINDS = [("chat", _("chat")), ("voice", _("voice"))]


class Conversation(models.Model):
    """One customer talking to the agent on one channel. What the channel says about the customer
    (currency, price list, timezone) travels to every tool call (G1)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    channel_kind = models.CharField(_("channel kind"), max_length=10, choices=CHANNEL_KINDS, default="chat")
    channel_name = models.CharField(_("channel"), max_length=40, blank=True, help_text=_("e.g. whatsapp, web"))
    customer_ref = models.CharField(_("customer reference"), max_length=200, blank=True)
    language = models.CharField(_("language"), max_length=16)
    currency = models.CharField(_("currency"), max_length=3, blank=True)
    price_list_id = models.CharField(_("price list"), max_length=100, blank=True)
    timezone = models.CharField(_("timezone"), max_length=64, default="UTC")
    # The API integration that started it (tenants.ApiKey.integration; public schema, so no foreign
    # key): a channel key reads and posts only its own integration's conversations. Empty when the
    # dashboard's playground started it, or an API key before integrations were recorded and no
    # message was posted to it since (then only admin keys and the dashboard see it).
    integration = models.UUIDField(null=True, blank=True, editable=False, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.channel_kind}:{self.channel_name or '-'}:{self.customer_ref or self.pk}"


class Message(models.Model):
    """A message of a conversation: the customer's (posted by the channel), the agent's reply, or
    a notice the platform sent on its own when a reminder or follow-up fell due (R12)."""

    class Role(models.TextChoices):
        CUSTOMER = "customer", _("customer")
        AGENT = "agent", _("agent")
        NOTICE = "notice", _("scheduled notice")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(_("role"), max_length=10, choices=Role.choices)
    text = models.TextField(_("text"))
    # The channel's own id for an inbound message: the same id twice is one message (A1).
    external_id = models.CharField(_("external id"), max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "external_id"], condition=~models.Q(external_id=""),
                name="message_unique_external_id",
            )
        ]
        # Conversation search (issue 20) matches words in either language: one index per config,
        # on the very expression runtime.search filters on, so the planner can use it.
        indexes = [
            GinIndex(SearchVector("text", config=config), name=f"message_text_{config}")
            for config in SEARCH_CONFIGS
        ]

    def __str__(self):
        return f"{self.role}: {self.text[:40]}"


class Turn(models.Model):
    """The agent's work on one customer message (R1): a tool loop, then one reply.

    `runner` and `lease_expires_at` let exactly one worker work on a turn at a time; a worker
    that dies leaves the lease to expire, and a redelivery takes over from the stored steps (R10).
    """

    class Status(models.TextChoices):
        QUEUED = "queued", _("queued")
        RUNNING = "running", _("running")
        DONE = "done", _("answered")
        FAILED = "failed", _("failed")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    message = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="turn")
    reply = models.OneToOneField(Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="reply_of")
    status = models.CharField(_("status"), max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    error_code = models.CharField(_("error"), max_length=40, blank=True)
    error_detail = models.TextField(_("error detail"), blank=True)
    iterations = models.PositiveSmallIntegerField(_("model calls in the tool loop"), default=0)
    turn_chars = models.PositiveIntegerField(_("tool result characters used"), default=0)
    runs = models.PositiveSmallIntegerField(_("runs"), default=0)
    runner = models.CharField(max_length=40, blank=True)
    # The API key whose post started the turn (public schema, so no foreign key): its webhook,
    # if it has one, gets the reply. Empty for turns started from the dashboard's playground.
    api_key_id = models.UUIDField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    resent_at = models.DateTimeField(null=True, blank=True)  # last time the sweeper sent the task again
    # The OpenTelemetry trace of the request that posted it (32 hex), when tracing is on (asixto/tracing.py).
    trace_id = models.CharField(_("trace"), max_length=32, null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"turn {self.pk} ({self.status})"

    @property
    def is_finished(self):
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def error_text(self) -> str:
        """Why the turn failed, in the active language ("" when unknown or none)."""
        return turn_error_text(self.error_code)

    @property
    def error_detail_shown(self) -> str:
        """The technical detail, unless the error's sentence already says everything."""
        return "" if self.error_code in SELF_EXPLAINED else self.error_detail


class TurnStep(models.Model):
    """One step of a turn, stored as it happens (R10): a model call (its answer), a tool call (the
    text the model read), or the reply request. A re-run replays `done` steps from here and
    sends a `started` tool step again with the same idempotency key."""

    class Kind(models.TextChoices):
        MODEL = "model", _("model call")
        TOOL = "tool", _("tool call")
        REPLY = "reply", _("reply")

    class State(models.TextChoices):
        STARTED = "started", _("started")
        DONE = "done", _("done")
        # A model or reply request that failed once sent (error, timeout): kept so usage counts it
        # (issue 20), never replayed as an answer.
        FAILED = "failed", _("failed")

    id = models.BigAutoField(primary_key=True)
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveSmallIntegerField()
    kind = models.CharField(max_length=10, choices=Kind.choices)
    state = models.CharField(max_length=10, choices=State.choices, default=State.STARTED)
    # Model and reply steps: the assistant message as the loop uses it.
    response = models.JSONField(null=True, blank=True)
    # Tool steps.
    tool_name = models.CharField(max_length=250, blank=True)
    call_id = models.CharField(max_length=100, blank=True)
    arguments = models.JSONField(null=True, blank=True)
    idempotency_key = models.CharField(max_length=200, blank=True)
    outcome = models.CharField(max_length=30, blank=True)
    model_text = models.TextField(blank=True)  # what the model read, after both budgets
    record_id = models.UUIDField(null=True, blank=True)  # the gateway's call record (tools.ToolCall)
    sends = models.PositiveSmallIntegerField(default=0)
    # Model, reply and routing steps: the request's tokens as the model server reported them
    # (`usage`); null when it did not say (issue 20).
    tokens_in = models.PositiveIntegerField(null=True, blank=True)
    tokens_out = models.PositiveIntegerField(null=True, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["turn", "index"]
        constraints = [models.UniqueConstraint(fields=["turn", "index"], name="turn_step_unique_index")]


class TurnEvent(models.Model):
    """What a channel shows or says while a turn works (R9), then the reply. The id orders the
    stream and is the SSE event id."""

    class Kind(models.TextChoices):
        STATUS = "status", _("status")
        CHART = "chart", _("chart")  # a chart spec drawn by asixto__draw_chart (R12)
        REPLY = "reply", _("reply")

    id = models.BigAutoField(primary_key=True)
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    text = models.TextField()
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["turn", "id"]


class TruncationLog(models.Model):
    """One cut of a tool result (R4): by the per-result budget (the gateway cut it) or by the
    turn's budget (cut to what was left, or replaced by the placeholder). Support staff read
    these; the dashboard ranks tools by how often and how much they overflow."""

    class Kind(models.TextChoices):
        RESULT = "result", _("per-result budget")
        TURN = "turn", _("per-turn budget")

    id = models.BigAutoField(primary_key=True)
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="truncations")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="truncations")
    tool_name = models.CharField(_("tool"), max_length=250)
    kind = models.CharField(_("kind"), max_length=10, choices=Kind.choices)
    original_chars = models.PositiveIntegerField(_("original size (characters)"))
    kept_chars = models.PositiveIntegerField(_("kept size (characters)"))
    created_at = models.DateTimeField(_("time"), auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["tool_name", "created_at"], name="truncation_tool_time")]

    def __str__(self):
        return f"{self.tool_name} {self.kind} {self.original_chars}->{self.kept_chars}"



class ChannelWebhook(models.Model):
    """Where a channel integration wants its turns' replies pushed (a WhatsApp bridge, a voice
    gateway). One per API key; the key lives in the public schema, so it is kept by id and prefix.
    The signing secret is encrypted at rest and shown once, at creation or rotation (T7)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    api_key_id = models.UUIDField(unique=True)
    api_key_prefix = models.CharField(_("API key"), max_length=16)
    url = models.URLField(_("callback URL"), max_length=500)
    secret = EncryptedTextField(_("signing secret"))
    enabled = models.BooleanField(_("enabled"), default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    secret_rotated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self):
        return f"webhook of asx_{self.api_key_prefix}_… → {self.url}"


class WebhookOutbox(models.Model):
    """A delivery owed to a webhook (issue 19): written in the same transaction as what it reports
    (the turn's reply, a reminder's notice), so no crash, broker or Redis outage between the commit
    and the queueing can lose it. `webhook_send` sends it (its id is the delivery id the receiver
    dedupes on) and books the next attempt; a periodic sweep queues any row that is due and
    nobody holds. `claimed_by` (a token) and `claimed_until` are the hold of the task sending it;
    `done_at` ends it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    webhook = models.ForeignKey(ChannelWebhook, on_delete=models.CASCADE, related_name="outbox")
    turn = models.ForeignKey(Turn, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    message = models.ForeignKey(Message, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    attempt = models.PositiveSmallIntegerField(default=1)  # the next attempt's number
    due_at = models.DateTimeField(default=timezone.now)
    claimed_until = models.DateTimeField(null=True, blank=True)
    claimed_by = models.CharField(max_length=32, blank=True)
    done_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["due_at"], condition=models.Q(done_at__isnull=True), name="webhook_outbox_owed")]


class WebhookDelivery(models.Model):
    """One attempt to deliver an event to a webhook: a finished turn (`turn.finished`), or a notice
    stored when a reminder or follow-up fell due (`reminder.due`, `follow_up.due`: `message` is
    the notice, `turn` the turn that scheduled it). The attempts of one delivery share
    `delivery_id` (sent as `X-Asixto-Delivery`, so the receiver can drop a repeat). A failure is
    kept as a code and parameters and shown in the reader's language (A3, runtime/webhook_errors.py).
    An attempt is stored `sending` before it is sent, so every attempt a receiver saw has its
    record; one whose sender ended before storing the answer (killed, PostgreSQL away for long)
    becomes `interrupted` when the delivery is taken up again (runtime/webhooks.py)."""

    class Outcome(models.TextChoices):
        DELIVERED = "delivered", _("delivered")
        RETRYING = "retrying", _("failed, will retry")
        FAILED = "failed", _("failed")
        REFUSED = "refused", _("refused by the outbound rules")
        SENDING = "sending", _("sending")
        INTERRUPTED = "interrupted", _("no answer recorded")

    id = models.BigAutoField(primary_key=True)
    webhook = models.ForeignKey(ChannelWebhook, on_delete=models.CASCADE, related_name="deliveries")
    turn = models.ForeignKey(Turn, null=True, blank=True, on_delete=models.CASCADE, related_name="webhook_deliveries")
    message = models.ForeignKey(Message, null=True, blank=True, on_delete=models.CASCADE, related_name="webhook_deliveries")
    event = models.CharField(_("event"), max_length=30, default="turn.finished")
    delivery_id = models.UUIDField(db_index=True)
    attempt = models.PositiveSmallIntegerField(_("attempt"))
    url = models.URLField(max_length=500)
    outcome = models.CharField(_("outcome"), max_length=12, choices=Outcome.choices)
    status_code = models.PositiveSmallIntegerField(_("HTTP status"), null=True, blank=True)
    error_code = models.CharField(_("error"), max_length=40, blank=True)
    error_params = models.JSONField(default=dict, blank=True)
    duration_ms = models.FloatField(_("duration (ms)"), default=0)
    created_at = models.DateTimeField(_("time"), auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["delivery_id", "attempt"], name="webhook_delivery_unique_attempt")
        ]

    def __str__(self):
        return f"{self.delivery_id} #{self.attempt} {self.outcome}"

    @property
    def error(self) -> str:
        """The failure in the active language ("" when delivered)."""
        from runtime.webhook_errors import render_error

        return render_error(self.error_code, self.error_params)


from runtime.builtins.models import (  # noqa: E402, F401  (models of the built-in tools, R12)
    ContactCapture, Document, FollowUp, Reminder, Skill,
)
