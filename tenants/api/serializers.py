"""Input and output serializers for the tenant, API-key and operator endpoints."""

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from asixto.api import StrictModelSerializer, StrictSerializer
from tenants.models import CHANNELS, LEVELS, MAX_SERVER_QUOTA, ApiKey, ApprovedCommand, Tenant, default_exposure_policy
from tenants.outbound import endpoint_problem
from tenants.services import MAX_GRACE_MINUTES


_LEVELS_SCHEMA = {"type": "array", "items": {"type": "string", "enum": list(LEVELS)}}


# Only the known channels are keys (an unknown one is a 400): the schema names them (issue 19).
@extend_schema_field({"type": "object", "properties": dict.fromkeys(CHANNELS, _LEVELS_SCHEMA),
                      "additionalProperties": False})
class ExposurePolicyField(serializers.DictField):
    """channel → tool levels agents may use there (M7), e.g. {"voice": ["read"]}."""

    child = serializers.ListField(child=serializers.ChoiceField(choices=LEVELS), allow_empty=True)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        unknown = sorted(set(value) - set(CHANNELS))
        if unknown:
            raise serializers.ValidationError(_("Unknown channel: %(names)s") % {"names": ", ".join(unknown)})
        return {**default_exposure_policy(), **{channel: sorted(set(levels), key=LEVELS.index) for channel, levels in value.items()}}


class TenantSettingsSerializer(StrictModelSerializer):
    """The agent settings (T6). Secrets are write-only (T7): responses say whether one is set, never what."""

    model_api_key = serializers.CharField(
        write_only=True, required=False, allow_blank=True, max_length=500,
        help_text="Sent only to model_base_url: moving that to another scheme, host or port removes the stored key unless "
                  "the same request sends a new one. Never returned.")
    router_api_key = serializers.CharField(
        write_only=True, required=False, allow_blank=True, max_length=500,
        help_text="Sent only to router_base_url, bound to it like model_api_key. Never returned.")
    model_api_key_set = serializers.SerializerMethodField()
    router_api_key_set = serializers.SerializerMethodField()
    language = serializers.ChoiceField(choices=[("es", "es"), ("en", "en"), ("pt", "pt")], required=False)
    scenarios = serializers.ListField(
        child=serializers.SlugField(max_length=60), max_length=100, required=False, allow_empty=True
    )
    exposure_policy = ExposurePolicyField(required=False)
    server_quota = serializers.IntegerField(
        source="effective_server_quota", read_only=True, help_text="How many MCP servers the tenant may register (set by the platform operator)."
    )

    class Meta:
        model = Tenant
        fields = [
            "slug", "name", "agent_instructions", "language",
            "model_base_url", "model_name", "model_api_key", "model_api_key_set",
            "router_base_url", "router_model_name", "router_api_key", "router_api_key_set",
            "price_in_per_million", "price_out_per_million",
            "iteration_limit", "result_budget", "turn_budget", "public_sources", "search_url", "scenarios", "exposure_policy", "server_quota",
            "trace_contents",
        ]
        read_only_fields = ["slug", "name"]

    def get_model_api_key_set(self, tenant) -> bool:
        return bool(tenant.model_api_key)

    def get_router_api_key_set(self, tenant) -> bool:
        return bool(tenant.router_api_key)

    def validate_model_base_url(self, value):
        return _reachable_endpoint(value, self.instance, "model")

    def validate_router_base_url(self, value):
        return _reachable_endpoint(value, self.instance, "model")

    def validate_search_url(self, value):
        return _reachable_endpoint(value, self.instance, "search")

    def validate(self, attrs):
        result_budget = attrs.get("result_budget", getattr(self.instance, "result_budget", 3000))
        turn_budget = attrs.get("turn_budget", getattr(self.instance, "turn_budget", 12000))
        if turn_budget < result_budget:
            raise serializers.ValidationError({"turn_budget": [_("Must be at least the per-result budget.")]})
        return attrs


def _reachable_endpoint(url, tenant, purpose):
    """Model endpoints follow the MCP servers' outbound rules (M2), approvals of `tenant` included."""
    problem = endpoint_problem(url, tenant=tenant, purpose=purpose)
    if problem:
        raise serializers.ValidationError(problem)
    return url


class ApiKeySerializer(serializers.ModelSerializer):
    is_active = serializers.BooleanField(read_only=True)

    class Meta:
        model = ApiKey
        fields = ["id", "name", "scope", "prefix", "created_at", "revoked_at", "expires_at", "last_used_at", "is_active",
                  "integration"]
        extra_kwargs = {
            "integration": {"help_text": "The key's integration: the key and the keys rotated from it share it. A channel "
                                         "key reads and posts only its integration's conversations."},
            "expires_at": {"help_text": "When the key stops working (401 key_expired); null: never."},
            "last_used_at": {"help_text": "The last request made with the key, to the minute."},
        }


class ApiKeyCreateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100)
    scope = serializers.ChoiceField(choices=[ApiKey.Scope.CHANNEL, ApiKey.Scope.ADMIN])
    expires_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text="Optional: when the key stops working (in the future)."
    )
    integration = serializers.UUIDField(
        required=False, allow_null=True,
        help_text="Optional, channel keys: continue the integration of an earlier channel key of this account (its "
                  "`integration`; revoked or expired keys included): the new key reads and posts to its conversations.",
    )


class ApiKeyRotateSerializer(StrictSerializer):
    grace_minutes = serializers.IntegerField(
        min_value=0, max_value=MAX_GRACE_MINUTES, required=False, default=0,
        help_text="How long the old key keeps working (0: it is revoked at once).",
    )


class ApiKeyCreatedSerializer(ApiKeySerializer):
    key = serializers.CharField(help_text="The key itself. Shown only in this response.")

    class Meta(ApiKeySerializer.Meta):
        fields = ApiKeySerializer.Meta.fields + ["key"]


class ApiKeyRotatedSerializer(ApiKeyCreatedSerializer):
    previous = ApiKeySerializer(help_text="The rotated key, revoked or expiring at the end of the grace.")

    class Meta(ApiKeyCreatedSerializer.Meta):
        fields = ApiKeyCreatedSerializer.Meta.fields + ["previous"]


class TenantCreateSerializer(StrictSerializer):
    slug = serializers.CharField(max_length=40)
    name = serializers.CharField(max_length=120)
    domain = serializers.CharField(max_length=253, required=False)
    server_quota = serializers.IntegerField(min_value=0, max_value=MAX_SERVER_QUOTA, required=False, allow_null=True)


class TenantOperatorUpdateSerializer(StrictModelSerializer):
    """What operators change on an existing tenant: its limits."""

    class Meta:
        model = Tenant
        fields = ["server_quota", "turns_in_flight_limit", "messages_per_minute"]
        extra_kwargs = {"server_quota": {"min_value": 0}}


class TenantCreatedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    slug = serializers.CharField()
    name = serializers.CharField()
    schema_name = serializers.CharField()
    domain = serializers.CharField()
    admin_username = serializers.CharField()
    admin_password = serializers.CharField()
    admin_api_key = serializers.CharField()


class TenantSummarySerializer(serializers.ModelSerializer):
    domain = serializers.SerializerMethodField()
    effective_server_quota = serializers.IntegerField(read_only=True, help_text="The quota in force (the platform default when server_quota is null).")

    class Meta:
        model = Tenant
        fields = ["id", "slug", "name", "schema_name", "domain", "server_quota", "effective_server_quota",
                  "turns_in_flight_limit", "messages_per_minute", "created_at"]

    def get_domain(self, tenant) -> str | None:
        domain = tenant.get_primary_domain()
        return domain.domain if domain else None


class ApprovedCommandSerializer(StrictModelSerializer):
    """An operator-approved stdio command (M3, issue 8); the rules are in tenants.stdio_commands."""

    class Meta:
        model = ApprovedCommand
        fields = ["slug", "description", "executable", "base_args", "allow_extra_args", "fixed_env", "tenant_vars", "enabled"]
        extra_kwargs = {"slug": {"validators": []}}  # the service answers a taken slug with 409


class ApprovedCommandUpdateSerializer(ApprovedCommandSerializer):
    class Meta(ApprovedCommandSerializer.Meta):
        read_only_fields = ["slug"]
