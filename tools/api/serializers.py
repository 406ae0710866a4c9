"""Input and output serializers for servers, tools, findings and catalog versions."""

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from asixto.api import QuerySerializer, StrictModelSerializer, StrictSerializer
from tenants.stdio_commands import MAX_VALUE_CHARS, MAX_VARS
from tools.auth_headers import MAX_VALUE, auth_header_problems
from tools.models import CatalogVersion, Finding, McpServer, RoutingExample, Tool, ToolCall
from tools.routing_examples import MAX_PER_TOOL as MAX_EXAMPLES
from tools.routing_examples import MAX_TEXT as MAX_EXAMPLE_TEXT
from tools.routing_examples import tool_examples


class AuthHeadersField(serializers.DictField):
    """Header name → value. Write-only (T7): responses only say which header names are set."""

    child = serializers.CharField(max_length=MAX_VALUE, allow_blank=False)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        problems = auth_header_problems(value)
        if problems:
            raise serializers.ValidationError(problems)
        return value


class EnvVarsField(serializers.DictField):
    """stdio variables the approved command declares, name → value (null or "" unsets one).
    Write-only (T7): responses list them in `env_vars`, secret ones only as set or not. The
    service checks the names against the command (tenants.stdio_commands)."""

    child = serializers.CharField(max_length=MAX_VALUE_CHARS, allow_blank=True, allow_null=True, trim_whitespace=False)

    def to_internal_value(self, data):
        if isinstance(data, dict) and len(data) > MAX_VARS:
            raise serializers.ValidationError(_("At most %(count)d variables.") % {"count": MAX_VARS})
        return super().to_internal_value(data)


class ServerSerializer(StrictModelSerializer):
    auth_headers = AuthHeadersField(
        write_only=True, required=False,
        help_text="Sent only to this server's URL: a change of the URL's scheme, host or port removes them unless the "
                  "same request sends new ones. Never returned.",
    )
    auth_header_names = serializers.SerializerMethodField()
    env = EnvVarsField(
        write_only=True, required=False,
        help_text="stdio only: values of the variables the approved command declares (see env_vars); null or \"\" unsets one. "
                  "Names left out keep their value. Never returned.",
    )
    env_vars = serializers.SerializerMethodField(
        help_text="The variables the approved command lets you set: name, secret, set, and value (plain ones only)."
    )
    shared_findings = serializers.SerializerMethodField(
        help_text="Warnings most of the server's tools share, shown once here instead of on every tool."
    )
    args = serializers.ListField(child=serializers.CharField(max_length=500), max_length=50, required=False)

    class Meta:
        model = McpServer
        fields = [
            "id", "slug", "name", "transport", "url", "command", "args", "auth_headers", "auth_header_names", "env",
            "env_vars", "timeout_seconds", "enabled", "contract_mode", "protocol_version", "is_legacy", "sync_status", "sync_error",
            "synced_at", "created_at", "shared_findings",
        ]
        read_only_fields = ["protocol_version", "is_legacy", "sync_status", "sync_error", "synced_at", "created_at"]

    def get_auth_header_names(self, server) -> list[str]:
        return sorted(server.headers)

    def get_env_vars(self, server) -> list[dict]:
        from tools.servers import env_state

        return env_state(server)

    def get_shared_findings(self, server) -> list[dict]:
        from tools.selectors import shared_warnings

        return [
            {name: entry[name] for name in ("rule", "message", "hint", "count", "total")} | {"severity": "warning"}
            for entry in shared_warnings(server_ids=[server.pk]).get(server.pk, [])
        ]


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


class RoutingExampleSerializer(serializers.ModelSerializer):
    class Meta:
        model = RoutingExample
        fields = ["text", "source", "created_by", "created_at", "turn_id"]


class ToolDetailSerializer(ToolSerializer):
    findings = FindingSerializer(many=True, read_only=True)
    examples = serializers.SerializerMethodField()

    class Meta(ToolSerializer.Meta):
        # `definition` is the effective one (what the model and the gateway read);
        # `server_definition` is exactly what the server sent; `overlay` is the admin's; `examples`
        # are what routing learns from: the admin's sample requests and support's corrections.
        fields = ToolSerializer.Meta.fields + ["definition", "server_definition", "overlay", "sample_arguments", "findings",
                                               "examples"]

    @extend_schema_field(RoutingExampleSerializer(many=True))
    def get_examples(self, tool):
        return RoutingExampleSerializer(tool_examples(tool), many=True).data


class OverlaySerializer(StrictSerializer):
    """The admin's overlay of one tool (issue 8); a field set to null or "" is cleared."""

    verb = serializers.CharField(max_length=200, required=False, allow_blank=True, allow_null=True)
    capabilities = serializers.ListField(child=serializers.CharField(max_length=200), max_length=50, required=False, allow_null=True)
    description = serializers.CharField(max_length=5000, required=False, allow_blank=True, allow_null=True)
    level = serializers.ChoiceField(choices=[*Tool.Level.values, ""], required=False, allow_null=True)
    # The admin's sample requests of the tool for routing (R6), replacing the previous ones ([] clears them)
    examples = serializers.ListField(child=serializers.CharField(max_length=MAX_EXAMPLE_TEXT, allow_blank=False),
                                     max_length=MAX_EXAMPLES, required=False)


class AcceptSuggestionsSerializer(StrictSerializer):
    tools = serializers.ListField(child=serializers.UUIDField(), max_length=1000, required=False)
    confirm = serializers.ListField(
        child=serializers.UUIDField(), max_length=1000, required=False,
        help_text="Tools whose suggestions are accepted even though they would block the tool; "
                  "any other such tool keeps its suggestions.",
    )


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
        fields = ["id", "server", "number", "created_at", "tool_count", "diff", "server_findings", "contract_mode", "overlays"]


class InvokeSerializer(StrictSerializer):
    """A test call from the console (A1): the arguments, and the context a turn would give."""

    arguments = serializers.JSONField()
    channel = serializers.ChoiceField(choices=["chat", "voice"], default="chat")
    conversation_id = serializers.CharField(max_length=100, required=False, default="console")
    idempotency_key = serializers.CharField(max_length=200, required=False)
    company_id = serializers.CharField(max_length=100, required=False, default="")
    price_list_id = serializers.CharField(max_length=100, required=False, default="")
    currency = serializers.CharField(max_length=10, required=False, default="")
    timezone = serializers.CharField(max_length=60, required=False, default="UTC")


class CallOutcomeSerializer(serializers.Serializer):
    record_id = serializers.UUIDField()
    outcome = serializers.CharField()
    model_text = serializers.CharField(help_text="Exactly the text the model would read.")
    structured = serializers.JSONField(allow_null=True)
    attempts = serializers.IntegerField()
    request_ids = serializers.ListField(child=serializers.CharField())
    duration_ms = serializers.FloatField()
    http_status = serializers.IntegerField(allow_null=True)
    retry_after = serializers.FloatField(allow_null=True)
    error = serializers.CharField(allow_blank=True)
    error_type = serializers.CharField(allow_blank=True)
    violations = serializers.ListField(child=serializers.DictField())
    truncated = serializers.BooleanField()


class ToolCallSerializer(serializers.ModelSerializer):
    class Meta:
        model = ToolCall
        fields = [
            "id", "tool", "tool_name", "source", "turn_id", "conversation_id", "channel", "idempotency_key",
            "request_ids", "attempts", "attempt_ms", "started_at", "duration_ms", "outcome", "http_status", "error", "arguments",
            "result_chars", "model_chars", "truncated", "violations", "result", "model_text",
        ]


class ToolFilterSerializer(QuerySerializer):
    server = serializers.CharField(max_length=20, required=False, source="server_slug")
    certification = serializers.ChoiceField(choices=Tool.Certification.choices, required=False, allow_blank=True)
    level = serializers.ChoiceField(choices=Tool.Level.choices, required=False, allow_blank=True)
    q = serializers.CharField(max_length=100, required=False, allow_blank=True, source="text")


class ToolCallFilterSerializer(QuerySerializer):
    tool = serializers.UUIDField(required=False, source="tool_id")
    tool_name = serializers.CharField(required=False, max_length=250,
                                      help_text="The tool's model-visible name (`server__tool`), as the catalog shows it.")
    outcome = serializers.ChoiceField(choices=ToolCall.Outcome.choices, required=False)
    turn = serializers.UUIDField(required=False, source="turn_id")
    violations = serializers.BooleanField(required=False, source="violations_only")


class ToolStatsSerializer(serializers.Serializer):
    """Per-tool figures over a period (issue 20), from the gateway's call records."""

    tool = serializers.UUIDField()
    since = serializers.DateTimeField()
    until = serializers.DateTimeField()
    calls = serializers.IntegerField()
    failures = serializers.IntegerField(help_text="Calls that failed (timeouts, connection or protocol errors, invalid output…); "
                                                  "a business error is an answer, not a failure.")
    failure_rate = serializers.FloatField(allow_null=True, help_text="failures / calls; null without calls.")
    p50_ms = serializers.FloatField(allow_null=True, help_text="Median call duration; null without calls.")
    p95_ms = serializers.FloatField(allow_null=True, help_text="95th percentile call duration; null without calls.")
    last_failure_at = serializers.DateTimeField(allow_null=True, help_text="The period's last failed call.")


class ResourceSerializer(serializers.Serializer):
    uri = serializers.CharField(allow_null=True)
    name = serializers.CharField(allow_null=True)
    title = serializers.CharField(allow_null=True)
    description = serializers.CharField(allow_null=True)
    mimeType = serializers.CharField(allow_null=True)  # noqa: N815 (the protocol's name)
    size = serializers.IntegerField(allow_null=True)


class PromptArgumentSerializer(serializers.Serializer):
    name = serializers.CharField(allow_null=True)
    description = serializers.CharField(allow_null=True)
    required = serializers.BooleanField()


class PromptSerializer(serializers.Serializer):
    name = serializers.CharField(allow_null=True)
    title = serializers.CharField(allow_null=True)
    description = serializers.CharField(allow_null=True)
    arguments = PromptArgumentSerializer(many=True)


class ServerResourcesSerializer(serializers.Serializer):
    """The server's `resources/list`, read now (issue 20); empty when it offers none."""

    server = serializers.UUIDField()
    resources = ResourceSerializer(many=True)
    truncated = serializers.BooleanField(help_text="The server lists more than the 500 shown.")


class ServerPromptsSerializer(serializers.Serializer):
    """The server's `prompts/list`, read now (issue 20); empty when it offers none."""

    server = serializers.UUIDField()
    prompts = PromptSerializer(many=True)
    truncated = serializers.BooleanField(help_text="The server lists more than the 500 shown.")
