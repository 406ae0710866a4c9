"""The channel API's answers to a post are built by one serializer kept per process (asixto.api.
representation, P4), and say exactly what a new DRF serializer of the same class says: the same
keys in the same order, the same texts, dates in the current timezone."""

import json
import uuid
from datetime import datetime, timezone as utc

from django.utils import timezone

from asixto.api import representation
from runtime.api import serializers as s
from runtime.models import Conversation, Message, Turn


def a_turn(external_id=""):
    conversation = Conversation(id=uuid.uuid4(), channel_kind="voice", channel_name="gw.1", customer_ref="+57 300",
                                language="es-co", currency="COP", timezone="America/Bogota",
                                created_at=datetime(2026, 3, 1, 12, 30, 5, 123456, tzinfo=utc.utc),
                                updated_at=timezone.now())
    message = Message(id=uuid.uuid4(), conversation=conversation, role="customer", text="hola", external_id=external_id)
    return Turn(id=uuid.uuid4(), conversation=conversation, message=message, status=Turn.Status.QUEUED)


def test_a_started_conversation_is_answered_as_its_serializer_would():
    conversation = a_turn().conversation
    for zone in ("UTC", "America/Bogota"):
        with timezone.override(zone):
            kept = representation(s.ConversationSerializer, conversation)
            assert json.dumps(kept) == json.dumps(s.ConversationSerializer(conversation).data)


def test_an_accepted_message_is_answered_as_its_serializer_would():
    for turn, duplicate in ((a_turn(), False), (a_turn("wa-1"), True)):
        kept = s.TurnAcceptedSerializer.of(turn, duplicate=duplicate)
        fresh = s.TurnAcceptedSerializer({
            "id": turn.pk, "status": turn.status, "conversation": turn.conversation_id,
            "message": {"id": turn.message.pk, "external_id": turn.message.external_id}, "duplicate": duplicate,
            **s.turn_urls(turn)}).data
        assert json.dumps(kept) == json.dumps(fresh)
        assert kept["status"] == "queued" and kept["duplicate"] is duplicate
