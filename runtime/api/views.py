"""REST endpoints of the runtime (R1, R9, A1): the channel API (conversations, messages, turns and
their event streams; channel and admin keys) and truncation logs (admin keys)."""

from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import generics, status
from rest_framework.exceptions import NotAcceptable, Throttled, ValidationError
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.utils.mediatypes import media_type_matches
from rest_framework.views import APIView

from asixto.api import representation
from asixto.json_input import unstorable_text
from runtime import channel, events, limits, search, selectors
from runtime.api import serializers as s
from runtime.models import Message
from runtime.stream_slots import StreamsFull
from tenants.api.auth import IsChannelKey


class ConversationListCreateView(generics.ListAPIView):
    """Conversations, newest first (filter: `channel_name`, `customer_ref`, search: `q`); POST starts one.
    A channel key sees and posts to the conversations its integration started (the key and the keys rotated
    from it); an admin key, all of the tenant's."""

    permission_classes = [IsChannelKey]
    serializer_class = s.ConversationSerializer

    FILTERS = ("channel_name", "customer_ref")

    def get_queryset(self):
        params = {name: self.request.query_params.get(name) for name in self.FILTERS}
        refused = {name: [_("Text may not contain NUL characters or unpaired surrogates.")]
                   for name, value in params.items() if value and unstorable_text(value)}
        q = self.request.query_params.get("q", "")
        if problem := search.query_problem(q):
            refused["q"] = [problem]
        if refused:  # PostgreSQL cannot compare with them: a clear 400, not a 500 (A4)
            raise ValidationError(refused)
        return selectors.conversations(key=self.request.auth, **params, q=q)

    @extend_schema(parameters=[
        OpenApiParameter("channel_name", OpenApiTypes.STR, description="Only conversations of this channel (exact)."),
        OpenApiParameter("customer_ref", OpenApiTypes.STR, description="Only conversations of this customer (exact)."),
        OpenApiParameter("q", OpenApiTypes.STR, description=(
            "Search (at most 200 characters): part of the customer reference (phone, e-mail) or of the channel name, any "
            "case, or words of the conversation's messages, in Spanish or English (inflections match; \"quotes\" for a "
            "phrase, `or`, `-word`).")),
    ])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(request=s.ConversationCreateSerializer, responses={201: s.ConversationSerializer})
    def post(self, request):
        data = s.ConversationCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        conversation = channel.conversation_start(data=data.validated_data, integration=request.auth.integration)
        return Response(representation(s.ConversationSerializer, conversation), status=status.HTTP_201_CREATED)


class ConversationDetailView(generics.RetrieveAPIView):
    """One conversation (a channel key: one its integration started; any other is 404)."""

    permission_classes = [IsChannelKey]
    serializer_class = s.ConversationSerializer

    def get_queryset(self):
        return selectors.visible_conversations(key=self.request.auth)


class MessageListCreateView(generics.ListAPIView):
    """The conversation's messages, oldest first; POST a customer message → 202 with its turn (R1)."""

    permission_classes = [IsChannelKey]
    serializer_class = s.MessageSerializer

    def get_queryset(self):
        conversation = get_object_or_404(selectors.visible_conversations(key=self.request.auth), pk=self.kwargs["pk"])
        return Message.objects.filter(conversation=conversation).select_related("turn", "reply_of").order_by("created_at")

    @extend_schema(
        request=s.MessagePostSerializer,
        responses={202: s.TurnAcceptedSerializer, 409: OpenApiResponse(
            description="This `external_id` was already used for a message with another text (`external_id_conflict`); "
                        "nothing stored."), 429: OpenApiResponse(
            description="Over the account's turns in flight or the key's messages per minute; nothing stored. "
                        "Send it again after `Retry-After` seconds.")},
        description="Store the message and queue its turn. The same `external_id` with the same text again returns "
                    "the first turn (`duplicate: true`); with another text, a 409.",
    )
    def post(self, request, pk):
        conversation = selectors.visible_conversation(key=request.auth, pk=pk)
        if conversation is None:
            raise Http404
        data = s.MessagePostSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        posted = channel.message_post(conversation=conversation, api_key_id=request.auth.pk, **data.validated_data,
                                      admit=lambda: limits.admit_message(api_key_id=request.auth.pk))
        body = s.TurnAcceptedSerializer.of(posted.turn, duplicate=not posted.created)
        return Response(body, status=status.HTTP_202_ACCEPTED)


class TurnDetailView(APIView):
    permission_classes = [IsChannelKey]

    @extend_schema(responses=s.TurnSerializer)
    def get(self, request, pk):
        turn = get_object_or_404(selectors.turns(key=request.auth), pk=pk)
        context = {"tool_calls": selectors.turn_tool_calls(turn=turn)}
        return Response(s.TurnSerializer(turn, context=context).data)


class EventStreamRenderer(BaseRenderer):
    """Lets clients ask for `text/event-stream`; errors before the stream starts become one
    `error` event with the usual error body."""

    media_type = "text/event-stream"
    format = "event-stream"
    charset = None

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return b"event: error\ndata: " + JSONRenderer().render(data) + b"\n\n"


# One server-sent event, as OpenAPI 3.0 describes an event stream's items (an object per event).
STREAM_EVENT = {
    "type": "object",
    "properties": {
        "event": {"type": "string", "enum": ["status", "chart", "reply", "timeout"]},
        "id": {"type": "string", "description": "Resume after it with `Last-Event-ID`."},
        "data": {"type": "string", "description": "JSON: the event's `text` and details (`{}` on `timeout`)."},
    },
    "required": ["event", "data"],
}


def _accepts_event_stream(request) -> bool:
    """Whether the request's Accept (none: anything) admits `text/event-stream`."""
    accept = request.META.get("HTTP_ACCEPT", "").strip()
    return not accept or any(media_type_matches("text/event-stream", part.split(";")[0].strip())
                             for part in accept.split(","))


class TurnEventsView(APIView):
    """Server-sent events of one turn (R9): `status` events while it works, then `reply`."""

    permission_classes = [IsChannelKey]
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(
        parameters=[OpenApiParameter("Last-Event-ID", OpenApiTypes.INT, OpenApiParameter.HEADER, required=False,
                                     description="Resume after this event id.")],
        responses={(200, "text/event-stream"): OpenApiResponse(
            STREAM_EVENT, description="`status` (and `chart`) events, then one `reply` event (or `timeout`: reconnect)."),
            429: OpenApiResponse(description="Too many streams open for this key or account; retry after `Retry-After` seconds.")},
    )
    def get(self, request, pk):
        # JSONRenderer is here for the errors; a client that accepts only JSON cannot read the stream.
        if not _accepts_event_stream(request):
            raise NotAcceptable()
        turn = get_object_or_404(selectors.visible_turns(key=request.auth).only("id"), pk=pk)
        try:
            return events.stream_response(request, turn_id=turn.pk, key_id=request.auth.pk)
        except StreamsFull as full:
            raise Throttled(wait=full.retry_after, detail=full.message) from None


@extend_schema_view(get=extend_schema(parameters=[s.TruncationLogFilterSerializer]))
class TruncationLogListView(generics.ListAPIView):
    """Truncation logs (R4), newest first; filter by tool, kind, turn and time (`since`, `until`)."""

    serializer_class = s.TruncationLogSerializer

    def get_queryset(self):
        params = s.TruncationLogFilterSerializer(data=self.request.query_params)
        params.is_valid(raise_exception=True)
        return selectors.truncation_logs(**params.validated_data)
