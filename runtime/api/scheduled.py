"""REST endpoints for reminders and follow-ups (R12), admin keys only (T3): list (filter
`conversation`, `state`), read, and cancel a pending one. Each tenant sees its own (T1)."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import generics, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from asixto.api import QuerySerializer
from runtime.builtins.delivery import scheduled_cancel
from runtime.builtins.models import FollowUp, Reminder

COMMON = ["id", "conversation", "turn", "due_at", "state", "delivered_at", "cancelled_at", "notice", "created_at"]


class ReminderSerializer(serializers.ModelSerializer):
    class Meta:
        model = Reminder
        fields = [*COMMON, "text"]


class FollowUpSerializer(serializers.ModelSerializer):
    class Meta:
        model = FollowUp
        fields = [*COMMON, "reason"]


class ScheduledFilterSerializer(QuerySerializer):
    conversation = serializers.UUIDField(required=False)
    state = serializers.ChoiceField(choices=Reminder.State.choices, required=False)


class _Scheduled:
    serializer_class: type[serializers.ModelSerializer]

    @property
    def model(self):
        return self.serializer_class.Meta.model


@extend_schema_view(get=extend_schema(parameters=[ScheduledFilterSerializer]))
class _List(_Scheduled, generics.ListAPIView):
    def get_queryset(self):
        params = ScheduledFilterSerializer(data=self.request.query_params)
        params.is_valid(raise_exception=True)
        return self.model.objects.filter(**params.validated_data).order_by("due_at", "id")


class _Detail(_Scheduled, APIView):
    def get(self, request, pk):
        return Response(self.serializer_class(get_object_or_404(self.model, pk=pk)).data)


class _Cancel(_Scheduled, APIView):
    """Cancel a pending item: it will not be sent. One already sent answers 400 (conflict)."""

    @extend_schema(request=None)
    def post(self, request, pk):
        return Response(self.serializer_class(scheduled_cancel(item=get_object_or_404(self.model, pk=pk))).data)


class ReminderList(_List):
    serializer_class = ReminderSerializer


class ReminderDetail(_Detail):
    serializer_class = ReminderSerializer


NOT_PENDING = OpenApiResponse(description="It was already sent; it cannot be cancelled (`conflict`).")


@extend_schema_view(post=extend_schema(responses={200: ReminderSerializer, 400: NOT_PENDING}))
class ReminderCancel(_Cancel):
    serializer_class = ReminderSerializer


class FollowUpList(_List):
    serializer_class = FollowUpSerializer


class FollowUpDetail(_Detail):
    serializer_class = FollowUpSerializer


@extend_schema_view(post=extend_schema(responses={200: FollowUpSerializer, 400: NOT_PENDING}))
class FollowUpCancel(_Cancel):
    serializer_class = FollowUpSerializer
