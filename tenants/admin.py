"""Django admin for platform operators (public schema): tenants, domains, approved stdio
commands, approved private hosts, operator API keys."""

from django import forms
from django.contrib import admin, messages
from django.db import connection, models
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django_tenants.admin import TenantAdminMixin

from asixto.errors import ApplicationError
from asixto.json_input import StorableJSONFormField
from tenants import services
from tenants.models import ApiKey, ApprovedCommand, ApprovedPrivateHost, Domain, Tenant

# The operators' admin is Asixto's, in the reader's language (LocaleMiddleware), not "Django administration".
admin.site.site_header = gettext_lazy("Asixto · platform operators")
admin.site.site_title = "Asixto"
admin.site.index_title = gettext_lazy("Platform administration")


class PublicOnlyAdmin(admin.ModelAdmin):
    formfield_overrides = {models.JSONField: {"form_class": StorableJSONFormField}}

    def has_module_permission(self, request):
        return connection.schema_name == "public" and super().has_module_permission(request)


class DomainInline(admin.TabularInline):
    model = Domain
    extra = 0


class TenantAddForm(forms.ModelForm):
    domain = forms.CharField(required=False, help_text="Default: <slug>.ASIXTO_BASE_DOMAIN")

    class Meta:
        model = Tenant
        fields = ["slug", "name"]

    def clean(self):
        """The creation service's own checks (reserved slugs, domains in use…), as form errors."""
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            services.validate_new_tenant(slug=cleaned.get("slug"), name=cleaned.get("name"), domain=cleaned.get("domain"))
        except ApplicationError as exc:
            for field, errors in exc.fields.items():
                for error in errors:
                    self.add_error(field if field in self.fields else None, error)
        return cleaned


@admin.register(Tenant)
class TenantAdmin(TenantAdminMixin, PublicOnlyAdmin):
    list_display = ["slug", "name", "schema_name", "server_quota", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [DomainInline]
    readonly_fields = ["schema_name", "model_api_key_state", "router_api_key_state"]
    exclude = ["model_api_key", "router_api_key"]

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = TenantAddForm
            kwargs["fields"] = ["slug", "name", "domain"]
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return ["schema_name", "slug"] if obj else []

    def get_inlines(self, request, obj):
        return self.inlines if obj else []

    @admin.display(description="model API key")
    def model_api_key_state(self, obj):
        return _("set") if obj.model_api_key else _("not set")

    @admin.display(description="router API key")
    def router_api_key_state(self, obj):
        return _("set") if obj.router_api_key else _("not set")

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        # New tenants go through the one creation service (schema, admin user, admin key).
        # The form ran the same checks; an error here is a race (the slug taken meanwhile).
        created = services.tenant_create(slug=obj.slug, name=obj.name, domain=form.cleaned_data.get("domain"))
        obj.pk = created.tenant.pk
        obj.schema_name = created.tenant.schema_name
        messages.warning(
            request,
            _("Tenant created. Admin user %(user)s, password %(password)s, API key %(key)s — shown only once.")
            % {"user": created.admin_username, "password": created.admin_password, "key": created.admin_api_key},
        )


@admin.register(ApprovedCommand)
class ApprovedCommandAdmin(PublicOnlyAdmin):
    list_display = ["slug", "executable", "enabled"]


@admin.register(ApprovedPrivateHost)
class ApprovedPrivateHostAdmin(PublicOnlyAdmin):
    """Private hosts tenants may reach with the global guard on (M2); who approved each is kept."""

    list_display = ["host", "ports", "purposes", "tenant", "allow_http", "note", "approved_by", "approved_at"]
    list_filter = ["allow_http"]
    search_fields = ["host", "note", "tenant__slug"]
    readonly_fields = ["approved_by", "approved_at"]
    fields = ["host", "ports", "purposes", "tenant", "allow_http", "note", "approved_by", "approved_at"]

    def save_model(self, request, obj, form, change):
        obj.approved_by = request.user.get_username()
        super().save_model(request, obj, form, change)


@admin.register(ApiKey)
class ApiKeyAdmin(PublicOnlyAdmin):
    list_display = ["name", "scope", "tenant", "prefix", "created_at", "last_used_at", "expires_at", "revoked_at"]
    list_filter = ["scope"]
    readonly_fields = ["tenant", "scope", "prefix", "created_at", "last_used_at", "expires_at", "revoked_at", "replaced_by"]
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False  # keys are created (and rotated) by `manage.py operator_key_create`/`operator_key_rotate` or by tenants

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset):
        for key in queryset:
            services.api_key_revoke(key=key)
