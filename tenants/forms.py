"""Dashboard forms for the tenant's settings and API keys."""

import uuid

from django import forms
from django.utils.translation import gettext_lazy as _

from asixto.date_fields import TypedDateTimeField
from tenants.models import CHANNELS, ApiKey, Tenant, default_exposure_policy
from tenants.outbound import endpoint_problem


class TenantSettingsForm(forms.ModelForm):
    """T6 settings. Secret inputs start empty and are never filled back (T7): leaving one empty
    keeps the stored secret; ticking its "clear" box removes it."""

    model_api_key = forms.CharField(
        label=_("Model API key"), required=False, max_length=500, widget=forms.PasswordInput(render_value=False),
        help_text=_("Sent only to the model endpoint: changing the endpoint's host removes the stored key unless you enter a new one."),
    )
    router_api_key = forms.CharField(
        label=_("Router model API key"), required=False, max_length=500, widget=forms.PasswordInput(render_value=False),
        help_text=_("Sent only to the router endpoint: changing its host removes the stored key unless you enter a new one."),
    )
    clear_model_api_key = forms.BooleanField(label=_("Remove the stored model API key"), required=False)
    clear_router_api_key = forms.BooleanField(label=_("Remove the stored router API key"), required=False)
    scenarios = forms.CharField(
        label=_("Scenarios"), required=False, max_length=4000,
        help_text=_("Comma-separated, e.g. soporte, pqr, garantia. Tools declare which ones they serve."),
    )
    policy_chat = forms.MultipleChoiceField(
        label=_("Tool levels agents may use in chat"), required=False, widget=forms.CheckboxSelectMultiple,
        choices=[("read", _("read")), ("write", _("write")), ("destructive", _("destructive"))],
    )
    policy_voice = forms.MultipleChoiceField(
        label=_("Tool levels agents may use in voice calls"), required=False, widget=forms.CheckboxSelectMultiple,
        choices=[("read", _("read")), ("write", _("write")), ("destructive", _("destructive"))],
    )
    language = forms.ChoiceField(label=_("Customer language"), choices=[("es", "Español"), ("en", "English"), ("pt", "Português")])

    class Meta:
        model = Tenant
        fields = [
            "agent_instructions", "language", "model_base_url", "model_name", "router_base_url",
            "router_model_name", "price_in_per_million", "price_out_per_million", "iteration_limit", "result_budget", "turn_budget", "public_sources", "search_url",
            "trace_contents",
        ]
        widgets = {"agent_instructions": forms.Textarea(attrs={"rows": 8})}
        help_texts = {
            "public_sources": _(
                "Off by default. When on, the agent may search the web and read public pages; what it takes from them "
                "is labelled as a public source."),
            "trace_contents": _(
                "Off by default. Traces (when the platform exports them) carry ids, names and outcomes only; when on, "
                "they also carry the customer's message and the tool arguments, cut to 1,000 characters."),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.initial["scenarios"] = ", ".join(self.instance.scenarios or [])
        policy = {**default_exposure_policy(), **(self.instance.exposure_policy or {})}
        for channel in CHANNELS:
            self.initial[f"policy_{channel}"] = policy[channel]

    def clean_scenarios(self):
        items = [item.strip() for item in self.cleaned_data["scenarios"].split(",") if item.strip()]
        field = forms.SlugField(max_length=60)
        for item in items:
            field.clean(item)
        return items

    def clean_model_base_url(self):
        return _reachable_endpoint(self.cleaned_data["model_base_url"], self.instance, "model")

    def clean_router_base_url(self):
        return _reachable_endpoint(self.cleaned_data["router_base_url"], self.instance, "model")

    def clean_search_url(self):
        return _reachable_endpoint(self.cleaned_data["search_url"], self.instance, "search")

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("turn_budget") and cleaned.get("result_budget") and cleaned["turn_budget"] < cleaned["result_budget"]:
            self.add_error("turn_budget", _("Must be at least the per-result budget."))
        return cleaned

    def changed_settings(self):
        """The validated values to save, in the shape `tenant_settings_update` takes."""
        data = {name: self.cleaned_data[name] for name in self.Meta.fields}
        data["scenarios"] = self.cleaned_data["scenarios"]
        data["exposure_policy"] = {channel: self.cleaned_data[f"policy_{channel}"] for channel in CHANNELS}
        for secret in ("model_api_key", "router_api_key"):
            if self.cleaned_data.get(f"clear_{secret}"):
                data[secret] = ""
            elif self.cleaned_data.get(secret):
                data[secret] = self.cleaned_data[secret]
        return data


def _reachable_endpoint(url, tenant, purpose):
    """Model endpoints follow the MCP servers' outbound rules (M2), approvals of `tenant` included."""
    problem = endpoint_problem(url, tenant=tenant, purpose=purpose)
    if problem:
        raise forms.ValidationError(problem)
    return url


class ApiKeyForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=100)
    scope = forms.ChoiceField(
        label=_("Scope"), choices=[(ApiKey.Scope.CHANNEL, ApiKey.Scope.CHANNEL.label), (ApiKey.Scope.ADMIN, ApiKey.Scope.ADMIN.label)]
    )
    expires_at = TypedDateTimeField(label=_("Expires"), required=False, help_text=_("Optional, in UTC. Empty: the key does not expire."))
    integration = forms.TypedChoiceField(
        label=_("Integration"), required=False, coerce=uuid.UUID, empty_value=None,
        help_text=_("Channel keys: a new integration, or the one of an earlier key (its conversations go on with the new key)."),
    )

    def __init__(self, *args, tenant=None, **kwargs):
        super().__init__(*args, **kwargs)
        newest = {}  # integration → its newest channel key, which names it
        for key in ApiKey.objects.filter(tenant=tenant, scope=ApiKey.Scope.CHANNEL).order_by("created_at", "pk"):
            newest[key.integration] = key
        self.fields["integration"].choices = [("", _("A new integration"))] + [
            (str(integration), f"{key.display_name} ({key.prefix})") for integration, key in reversed(newest.items())]


class ApiKeyRotateForm(forms.Form):
    """How long the old key keeps working after a rotation (issue 20)."""

    GRACES = [(0, _("Revoke the old key now")), (60, _("Keep the old key 1 hour")),
              (24 * 60, _("Keep the old key 24 hours")), (7 * 24 * 60, _("Keep the old key 7 days"))]
    grace_minutes = forms.TypedChoiceField(label=_("Old key"), choices=GRACES, coerce=int, initial=0)
