"""REST endpoints of the tenants app: the tenant's own settings, its API keys, the operator API."""

from django.db import connection
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from tenants import services, stdio_commands
from tenants.api import serializers as s
from tenants.api.auth import IsOperatorKey
from tenants.models import ApiKey, ApprovedCommand, Tenant


class TenantSettingsView(APIView):
    """The calling key's tenant: read and change its settings (T6, T7)."""

    @extend_schema(responses=s.TenantSettingsSerializer)
    def get(self, request):
        return Response(s.TenantSettingsSerializer(request.tenant).data)

    @extend_schema(request=s.TenantSettingsSerializer, responses=s.TenantSettingsSerializer)
    def patch(self, request):
        tenant = Tenant.objects.get(pk=request.tenant.pk)
        serializer = s.TenantSettingsSerializer(tenant, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        tenant = services.tenant_settings_update(tenant=tenant, data=serializer.validated_data)
        return Response(s.TenantSettingsSerializer(tenant).data)


def tenant_api_keys(request):
    # ApiKey lives in the public schema: the tenant filter is the isolation here (T2).
    return ApiKey.objects.filter(tenant_id=request.tenant.pk)


class ApiKeyListCreateView(generics.ListAPIView):
    serializer_class = s.ApiKeySerializer

    def get_queryset(self):
        return tenant_api_keys(self.request)

    @extend_schema(request=s.ApiKeyCreateSerializer, responses={201: s.ApiKeyCreatedSerializer})
    def post(self, request):
        data = s.ApiKeyCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        key, plaintext = services.api_key_create(tenant=request.tenant, **data.validated_data)
        key.key = plaintext
        return Response(s.ApiKeyCreatedSerializer(key).data, status=status.HTTP_201_CREATED)


class ApiKeyDetailView(APIView):
    @extend_schema(responses=s.ApiKeySerializer)
    def get(self, request, pk):
        return Response(s.ApiKeySerializer(get_object_or_404(tenant_api_keys(request), pk=pk)).data)

    @extend_schema(responses={200: s.ApiKeySerializer}, description="Revoke the key. It stops working at once.")
    def delete(self, request, pk):
        key = services.api_key_revoke(key=get_object_or_404(tenant_api_keys(request), pk=pk))
        return Response(s.ApiKeySerializer(key).data)


class ApiKeyRotateView(APIView):
    @extend_schema(
        request=s.ApiKeyRotateSerializer,
        responses={201: s.ApiKeyRotatedSerializer, 409: OpenApiResponse(
            description="The key is revoked or expired (`key_inactive`), or was already rotated (`key_rotated`: rotate "
                        "the key that replaced it).")},
        description="Replace the key by a new one with the same name, scope and expiry (its secret is shown only in "
                    "this response). The old key is revoked at once, or keeps working for `grace_minutes`; "
                    "a webhook of the old key, and the conversations its integration started, move to the new one.",
    )
    def post(self, request, pk):
        data = s.ApiKeyRotateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        old = get_object_or_404(tenant_api_keys(request), pk=pk)
        key, plaintext = services.api_key_rotate(key=old, **data.validated_data)
        key.key = plaintext
        key.previous = ApiKey.objects.get(pk=old.pk)
        return Response(s.ApiKeyRotatedSerializer(key).data, status=status.HTTP_201_CREATED)


class OperatorTenantListCreateView(generics.ListAPIView):
    """Operators (public schema): list and create tenants (T5)."""

    permission_classes = [IsOperatorKey]
    serializer_class = s.TenantSummarySerializer

    def get_queryset(self):
        return Tenant.objects.exclude(schema_name="public").prefetch_related("domains")

    @extend_schema(request=s.TenantCreateSerializer, responses={201: s.TenantCreatedSerializer})
    def post(self, request):
        data = s.TenantCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        created = services.tenant_create(**data.validated_data)
        return Response(s.TenantCreatedSerializer(created.as_dict()).data, status=status.HTTP_201_CREATED)


class OperatorTenantDetailView(APIView):
    """Operators: read one tenant, change its limits (the MCP server quota)."""

    permission_classes = [IsOperatorKey]

    def get_object(self, pk):
        return get_object_or_404(Tenant.objects.exclude(schema_name="public"), pk=pk)

    @extend_schema(responses=s.TenantSummarySerializer)
    def get(self, request, pk):
        return Response(s.TenantSummarySerializer(self.get_object(pk)).data)

    @extend_schema(request=s.TenantOperatorUpdateSerializer, responses=s.TenantSummarySerializer)
    def patch(self, request, pk):
        tenant = self.get_object(pk)
        data = s.TenantOperatorUpdateSerializer(tenant, data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        tenant = services.tenant_settings_update(tenant=tenant, data=data.validated_data)
        return Response(s.TenantSummarySerializer(tenant).data)


class OperatorCommandListCreateView(generics.ListAPIView):
    """Operators: list and approve stdio commands (M3, issue 8)."""

    permission_classes = [IsOperatorKey]
    serializer_class = s.ApprovedCommandSerializer
    queryset = ApprovedCommand.objects.all()

    @extend_schema(request=s.ApprovedCommandSerializer, responses={
        201: s.ApprovedCommandSerializer, 409: OpenApiResponse(description="A command with this slug is already approved (`conflict`).")})
    def post(self, request):
        data = s.ApprovedCommandSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        command = stdio_commands.approved_command_create(**data.validated_data)
        return Response(s.ApprovedCommandSerializer(command).data, status=status.HTTP_201_CREATED)


class OperatorCommandDetailView(APIView):
    """Operators: read, change or disable one approved command. Disabling keeps the row (servers
    of it fail with a clear error until it is enabled again)."""

    permission_classes = [IsOperatorKey]

    @extend_schema(responses=s.ApprovedCommandSerializer)
    def get(self, request, slug):
        return Response(s.ApprovedCommandSerializer(get_object_or_404(ApprovedCommand, slug=slug)).data)

    @extend_schema(request=s.ApprovedCommandUpdateSerializer, responses=s.ApprovedCommandSerializer)
    def patch(self, request, slug):
        command = get_object_or_404(ApprovedCommand, slug=slug)
        data = s.ApprovedCommandUpdateSerializer(command, data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        command = stdio_commands.approved_command_update(command=command, data=data.validated_data)
        return Response(s.ApprovedCommandSerializer(command).data)

    @extend_schema(responses={200: s.ApprovedCommandSerializer}, description="Disable the command (the approval is kept).")
    def delete(self, request, slug):
        command = stdio_commands.approved_command_disable(command=get_object_or_404(ApprovedCommand, slug=slug))
        return Response(s.ApprovedCommandSerializer(command).data)


class HealthView(APIView):
    """Liveness for load balancers: the database answers."""

    permission_classes = [AllowAny]
    authentication_classes = []

    @extend_schema(responses={200: dict, 503: OpenApiResponse(description="The database does not answer (`unavailable`).")})
    def get(self, request):
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return Response({"status": "ok"})
