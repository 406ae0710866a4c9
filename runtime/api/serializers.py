"""Input and output serializers of the channel API: conversations, messages, turns, truncation logs."""

import zoneinfo

from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from asixto.api import QuerySerializer, StrictSerializer, representation
from runtime.models import CHANNEL_KINDS, Conversation, Message, TruncationLog, Turn, TurnEvent
from tools.models import ToolCall

MAX_MESSAGE_CHARS = 4000
LANGUAGE_PATTERN = r"^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$"


# The IANA names this Python knows: the schema lists them, so a client (and schemathesis) knows
# which names a conversation accepts (issue 19).
TIMEZONES = sorted(zoneinfo.available_timezones())


@extend_schema_field({"type": "string", "enum": TIMEZONES})
class TimezoneField(serializers.CharField):
    """An IANA timezone name (`America/Bogota`), one of TIMEZONES."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value not in _TIMEZONE_SET:
            raise serializers.ValidationError(_("An IANA timezone such as America/Bogota."))
        return value


_TIMEZONE_SET = frozenset(TIMEZONES)


class ConversationCreateSerializer(StrictSerializer):
    channel_kind = serializers.ChoiceField(choices=CHANNEL_KINDS, default="chat")
    channel_name = serializers.RegexField(
        r"^[a-z0-9][a-z0-9_.-]{0,39}$", required=False, allow_blank=True, default="",
        error_messages={"invalid": _("Up to 40 lowercase letters, digits, dots, hyphens or underscores.")},
    )
    customer_ref = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    language = serializers.RegexField(
        LANGUAGE_PATTERN, max_length=16, required=False, allow_blank=True, default="",
        error_messages={"invalid": _("A language code such as es, en or es-CO.")},
    )
    currency = serializers.RegexField(
        r"^[A-Za-z]{3}$", required=False, allow_blank=True, default="",
        error_messages={"invalid": _("A three-letter ISO 4217 currency code such as COP.")},
    )
    price_list_id = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    timezone = TimezoneField(required=False, default="UTC")

    def validate_currency(self, value):
        return value.upper()

    def validate_language(self, value):
        return value.lower()



class ConversationSerializer(serializers.ModelSerializer):
    messages_url = serializers.SerializerMethodField()

    class Meta:
        model = Conversation
        fields = [
            "id", "channel_kind", "channel_name", "customer_ref", "language", "currency", "price_list_id", "timezone",
            "created_at", "updated_at", "messages_url",
        ]

    def get_messages_url(self, conversation) -> str:
        return reverse("api:conversation-messages", args=[conversation.pk])


class MessagePostSerializer(StrictSerializer):
    text = serializers.CharField(max_length=MAX_MESSAGE_CHARS)
    external_id = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


class MessageSerializer(serializers.ModelSerializer):
    turn = serializers.SerializerMethodField()

    class Meta:
        model = Message
        fields = ["id", "role", "text", "external_id", "created_at", "turn"]

    def get_turn(self, message) -> str | None:
        if message.role == Message.Role.CUSTOMER:
            turn = getattr(message, "turn", None)
        else:
            turn = getattr(message, "reply_of", None)
        return str(turn.pk) if turn is not None else None


def turn_urls(turn) -> dict:
    return {"url": reverse("api:turn-detail", args=[turn.pk]), "events_url": reverse("api:turn-events", args=[turn.pk])}


class AcceptedMessageSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    external_id = serializers.CharField()


class TurnAcceptedSerializer(serializers.Serializer):
    """The 202 answer to a posted message: the turn to follow (R1)."""

    id = serializers.UUIDField()
    status = serializers.CharField()
    conversation = serializers.UUIDField()
    message = AcceptedMessageSerializer()
    duplicate = serializers.BooleanField(help_text=_("True when this external_id was posted before: the first turn."))
    url = serializers.CharField()
    events_url = serializers.CharField()

    @classmethod
    def of(cls, turn, *, duplicate: bool) -> dict:
        return representation(cls, {
            "id": turn.pk, "status": turn.status, "conversation": turn.conversation_id,
            "message": {"id": turn.message.pk, "external_id": turn.message.external_id}, "duplicate": duplicate,
            **turn_urls(turn),
        })


class TurnEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = TurnEvent
        fields = ["id", "kind", "text", "data", "created_at"]


class TurnToolCallSerializer(serializers.ModelSerializer):
    class Meta:
        model = ToolCall
        fields = ["id", "tool_name", "outcome", "arguments", "attempts", "duration_ms", "truncated", "started_at"]


class TruncationLogSerializer(serializers.ModelSerializer):
    class Meta:
        model = TruncationLog
        fields = ["id", "turn", "conversation", "tool_name", "kind", "original_chars", "kept_chars", "created_at"]


class TurnSerializer(serializers.ModelSerializer):
    message = serializers.SerializerMethodField()
    reply = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()
    events = TurnEventSerializer(many=True, read_only=True)
    truncations = TruncationLogSerializer(many=True, read_only=True)
    tool_calls = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    events_url = serializers.SerializerMethodField()

    class Meta:
        model = Turn
        fields = [
            "id", "conversation", "status", "message", "reply", "error", "events", "tool_calls", "truncations",
            "iterations", "turn_chars", "runs", "created_at", "started_at", "finished_at", "url", "events_url", "trace_id",
        ]

    def get_message(self, turn) -> dict:
        return {"id": str(turn.message.pk), "text": turn.message.text, "external_id": turn.message.external_id}

    def get_reply(self, turn) -> dict | None:
        if turn.reply is None:
            return None
        return {"id": str(turn.reply.pk), "text": turn.reply.text, "created_at": turn.reply.created_at}

    def get_error(self, turn) -> dict | None:
        return {"code": turn.error_code, "detail": turn.error_detail} if turn.error_code else None

    def get_tool_calls(self, turn) -> list[dict]:
        return TurnToolCallSerializer(self.context["tool_calls"], many=True).data

    def get_url(self, turn) -> str:
        return turn_urls(turn)["url"]

    def get_events_url(self, turn) -> str:
        return turn_urls(turn)["events_url"]


class TruncationLogFilterSerializer(QuerySerializer):
    """Query parameters of the truncation log list (pagination parameters pass through)."""

    tool = serializers.CharField(max_length=250, required=False, source="tool_name")
    kind = serializers.ChoiceField(choices=TruncationLog.Kind.choices, required=False)
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)
    turn = serializers.UUIDField(required=False, source="turn_id")
