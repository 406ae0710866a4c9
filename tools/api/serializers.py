"""Input and output serializers for servers, tools, findings and catalog versions."""

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from asixto.api import StrictModelSerializer, StrictSerializer
from tools.models import CatalogVersion, Finding, McpServer, Tool

MAX_HEADERS = 20


class AuthHeadersField(serializers.DictField):
    """Header name → value. Write-only (T7): responses only say which header names are set."""

    child = serializers.CharField(max_length=4000, allow_blank=False)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if len(value) > MAX_HEADERS:
            raise serializers.ValidationError(_("At most %(count)d headers.") % {"count": MAX_HEADERS})
        for name in value:
            if not name or len(name) > 100 or not all(c.isalnum() or c in "-_" for c in name):
                raise serializers.ValidationError(_("Not a valid header name: %(name)s") % {"name": name[:100]})
            if name.lower() in {"host", "content-length", "mcp-method", "mcp-name", "mcp-protocol-version"}:
                raise serializers.ValidationError(_("This header is set by the platform: %(name)s") % {"name": name})
        return value


class ServerSerializer(StrictModelSerializer):
    auth_headers = AuthHeadersField(write_only=True, required=False)
    auth_header_names = serializers.SerializerMethodField()
    args = serializers.ListField(child=serializers.CharField(max_length=500), max_length=50, required=False)

    class Meta:
        model = McpServer
        fields = [
            "id", "slug", "name", "transport", "url", "command", "args", "auth_headers", "auth_header_names",
            "timeout_seconds", "enabled", "protocol_version", "is_legacy", "sync_status", "sync_error",
            "synced_at", "created_at",
        ]
        read_only_fields = ["protocol_version", "is_legacy", "sync_status", "sync_error", "synced_at", "created_at"]

    def get_auth_header_names(self, server) -> list[str]:
        return sorted(server.headers)


class ServerUpdateSerializer(ServerSerializer):
    class Meta(ServerSerializer.Meta):
        read_only_fields = ServerSerializer.Meta.read_only_fields + ["slug"]


class FindingSerializer(serializers.ModelSerializer):
    message = serializers.CharField(read_only=True)
    hint = serializers.CharField(read_only=True)

    class Meta:
        model = Finding
        fields = ["rule", "severity", "message", "hint", "source", "created_at"]


class ToolSerializer(serializers.ModelSerializer):
    server = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    available_to_agents = serializers.BooleanField(source="is_available_to_agents", read_only=True)

    class Meta:
        model = Tool
        fields = [
            "id", "server", "name", "prefixed_name", "position", "level", "certification", "certified_at",
            "enabled", "available_to_agents",
        ]


class ToolDetailSerializer(ToolSerializer):
    findings = FindingSerializer(many=True, read_only=True)

    class Meta(ToolSerializer.Meta):
        fields = ToolSerializer.Meta.fields + ["definition", "sample_arguments", "findings"]


class ToolUpdateSerializer(StrictSerializer):
    enabled = serializers.BooleanField(required=False)
    sample_arguments = serializers.JSONField(required=False, allow_null=True)

    def validate_sample_arguments(self, value):
        if value is not None and not isinstance(value, dict):
            raise serializers.ValidationError(_("Sample arguments must be a JSON object."))
        return value


class CatalogVersionSerializer(serializers.ModelSerializer):
    server = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = CatalogVersion
        fields = ["id", "server", "number", "created_at", "tool_count", "diff", "server_findings"]
