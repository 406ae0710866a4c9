"""REST endpoints for webhooks: admin keys manage every key's webhook; a channel key sees and sets
only its own (another's is a 404). The signing secret is in the answer to a creation or a
rotation, and in no other answer (T7)."""

from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import generics, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from asixto.api import QuerySerializer, StrictSerializer
from asixto.errors import ApplicationError
from runtime import webhooks
from runtime.models import ChannelWebhook, WebhookDelivery
from tenants.api.auth import IsChannelKey
from tenants.models import ApiKey


class WebhookSerializer(serializers.ModelSerializer):
    api_key = serializers.UUIDField(source="api_key_id", read_only=True)
    deliveries_url = serializers.SerializerMethodField()

    class Meta:
        model = ChannelWebhook
        fields = ["id", "api_key", "api_key_prefix", "url", "enabled", "created_at", "updated_at", "secret_rotated_at",
                  "deliveries_url"]

    def get_deliveries_url(self, webhook) -> str:
        return reverse("api:webhook-deliveries", args=[webhook.pk])


class WebhookCreatedSerializer(WebhookSerializer):
    secret = serializers.CharField(help_text=gettext_lazy("The signing secret. Shown this once: keep it now."))

    class Meta(WebhookSerializer.Meta):
        fields = [*WebhookSerializer.Meta.fields, "secret"]


class WebhookCreateSerializer(StrictSerializer):
    api_key = serializers.UUIDField(required=False, help_text=gettext_lazy(
        "The key whose turns are pushed (admin keys only; default: the calling key)."))
    url = serializers.URLField(max_length=500)


class WebhookUpdateSerializer(StrictSerializer):
    url = serializers.URLField(max_length=500, required=False)
    enabled = serializers.BooleanField(required=False)


class SecretSerializer(serializers.Serializer):
    secret = serializers.CharField()


class DeliverySerializer(serializers.ModelSerializer):
    error = serializers.CharField(read_only=True, help_text=gettext_lazy(
        "Why the attempt failed, in the request's language (Accept-Language); empty when delivered."))
    error_code = serializers.CharField(read_only=True, help_text=gettext_lazy(
        "refused, redirect, http_status, timeout, connection_failed, or literal (stored before codes)."))
    error_params = serializers.JSONField(read_only=True)

    class Meta:
        model = WebhookDelivery
        fields = ["id", "delivery_id", "event", "turn", "message", "attempt", "url", "outcome", "status_code",
                  "error_code", "error_params", "error", "duration_ms", "created_at"]


class DeliveryFilterSerializer(QuerySerializer):
    turn = serializers.UUIDField(required=False)
    outcome = serializers.ChoiceField(choices=WebhookDelivery.Outcome.choices, required=False)


def visible_webhooks(request):
    """Admin keys see every webhook of the tenant; any other key only its own."""
    queryset = ChannelWebhook.objects.all()
    if request.auth.scope != ApiKey.Scope.ADMIN:
        queryset = queryset.filter(api_key_id=request.auth.pk)
    return queryset


def _key_for(request, requested) -> ApiKey:
    if requested is None or requested == request.auth.pk:
        return request.auth
    if request.auth.scope != ApiKey.Scope.ADMIN:
        raise ApplicationError(_("A channel key sets its own webhook only."),
                               fields={"api_key": [_("A channel key sets its own webhook only.")]})
    key = webhooks.tenant_keys(tenant_id=request.tenant.pk).filter(pk=requested).first()
    if key is None:
        raise ApplicationError(_("No active key of this tenant has this id."),
                               fields={"api_key": [_("No active key of this tenant has this id.")]})
    return key


class WebhookListCreateView(generics.ListAPIView):
    """Webhooks (one per API key); POST sets one and answers with its secret, once."""

    permission_classes = [IsChannelKey]
    serializer_class = WebhookSerializer

    def get_queryset(self):
        return visible_webhooks(self.request)

    @extend_schema(request=WebhookCreateSerializer, responses={201: WebhookCreatedSerializer, 409: OpenApiResponse(
        description="The key was rotated and is in its grace (`key_rotated`): set the webhook with the new key.")})
    def post(self, request):
        data = WebhookCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        key = _key_for(request, data.validated_data.get("api_key"))
        webhook, secret = webhooks.webhook_create(api_key=key, url=data.validated_data["url"])
        webhook.secret = secret
        return Response(WebhookCreatedSerializer(webhook).data, status=status.HTTP_201_CREATED)


class WebhookDetailView(APIView):
    permission_classes = [IsChannelKey]

    @extend_schema(responses=WebhookSerializer)
    def get(self, request, pk):
        return Response(WebhookSerializer(get_object_or_404(visible_webhooks(request), pk=pk)).data)

    @extend_schema(request=WebhookUpdateSerializer, responses=WebhookSerializer)
    def patch(self, request, pk):
        webhook = get_object_or_404(visible_webhooks(request), pk=pk)
        data = WebhookUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(WebhookSerializer(webhooks.webhook_update(webhook=webhook, data=data.validated_data)).data)

    @extend_schema(responses={204: None}, description="Remove the webhook: finished turns are no longer pushed.")
    def delete(self, request, pk):
        get_object_or_404(visible_webhooks(request), pk=pk).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookSecretView(APIView):
    permission_classes = [IsChannelKey]

    @extend_schema(request=None, responses=SecretSerializer,
                   description="Rotate the signing secret: the answer holds the new one, shown this once.")
    def post(self, request, pk):
        webhook = get_object_or_404(visible_webhooks(request), pk=pk)
        return Response({"secret": webhooks.webhook_rotate_secret(webhook=webhook)})


@extend_schema_view(get=extend_schema(parameters=[DeliveryFilterSerializer]))
class WebhookDeliveryListView(generics.ListAPIView):
    """Every delivery attempt of the webhook, newest first (filter: `turn`, `outcome`)."""

    permission_classes = [IsChannelKey]
    serializer_class = DeliverySerializer

    def get_queryset(self):
        webhook = get_object_or_404(visible_webhooks(self.request), pk=self.kwargs["pk"])
        params = DeliveryFilterSerializer(data=self.request.query_params)
        params.is_valid(raise_exception=True)
        return WebhookDelivery.objects.filter(webhook=webhook, **params.validated_data).order_by("-created_at", "-id")
