"""Dashboard pages of the tenants app: login, agent settings, API keys (the overview, which
reads the catalog, the calls and the turns, lives in runtime.views.overview).

Every page runs in the tenant's schema (resolved by domain); users exist per schema, so a user
of one tenant cannot sign in on another's domain (T1, T4)."""

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from asixto.errors import ApplicationError
from tenants import services
from tenants.access import admin_page
from tenants.forms import ApiKeyForm, ApiKeyRotateForm, TenantSettingsForm
from tenants.models import ApiKey, Tenant
from tenants.pages import list_page


@admin_page
def settings_page(request):
    tenant = Tenant.objects.get(pk=request.tenant.pk)
    form = TenantSettingsForm(request.POST or None, instance=tenant)
    if request.method == "POST" and form.is_valid():
        services.tenant_settings_update(tenant=Tenant.objects.get(pk=tenant.pk), data=form.changed_settings())
        messages.success(request, _("Settings saved."))
        return redirect("dashboard:settings")
    return render(request, "dashboard/settings.html", {"nav": "settings", "form": form, "tenant": tenant})


def _keys_page(request, *, form=None, created_key=None, status=200):
    page = list_page(request, ApiKey.objects.filter(tenant_id=request.tenant.pk).order_by("-created_at", "pk"))
    return render(request, "dashboard/api_keys.html", {
        "nav": "api_keys", "form": form or ApiKeyForm(tenant=request.tenant), "rotate_form": ApiKeyRotateForm(), "page": page, "keys": page,
        "created_key": created_key,
    }, status=status)


@admin_page
def api_keys_page(request):
    form = ApiKeyForm(request.POST or None, tenant=request.tenant)
    if request.method == "POST" and form.is_valid():
        try:
            _key, created_key = services.api_key_create(tenant=request.tenant, **form.cleaned_data)
        except ApplicationError as exc:
            for field, errors in exc.fields.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            return _keys_page(request, created_key=created_key)
    return _keys_page(request, form=form, status=400 if form.errors else 200)


@admin_page
@require_POST
def api_key_rotate(request, pk):
    """A new key in place of this one (same name, scope and expiry), shown once (issue 20)."""
    key = get_object_or_404(ApiKey, tenant_id=request.tenant.pk, pk=pk)
    form = ApiKeyRotateForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Choose how long the old key keeps working."))
        return redirect("dashboard:api_keys")
    try:
        _new, created_key = services.api_key_rotate(key=key, grace_minutes=form.cleaned_data["grace_minutes"])
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("dashboard:api_keys")
    messages.success(request, _("Key %(name)s rotated.") % {"name": key.display_name})
    return _keys_page(request, created_key=created_key)


@admin_page
@require_POST
def api_key_revoke(request, pk):
    key = get_object_or_404(ApiKey, tenant_id=request.tenant.pk, pk=pk)
    services.api_key_revoke(key=key)
    messages.success(request, _("Key %(name)s revoked.") % {"name": key.display_name})
    return redirect("dashboard:api_keys")


urlpatterns = [
    path("login/", auth_views.LoginView.as_view(template_name="registration/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("settings/", settings_page, name="settings"),
    path("api-keys/", api_keys_page, name="api_keys"),
    path("api-keys/<uuid:pk>/revoke/", api_key_revoke, name="api_key_revoke"),
    path("api-keys/<uuid:pk>/rotate/", api_key_rotate, name="api_key_rotate"),
]
