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

from tenants import services
from tenants.access import admin_page
from tenants.forms import ApiKeyForm, TenantSettingsForm
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


@admin_page
def api_keys_page(request):
    form = ApiKeyForm(request.POST or None)
    created_key = None
    if request.method == "POST" and form.is_valid():
        _key, created_key = services.api_key_create(tenant=request.tenant, **form.cleaned_data)
        form = ApiKeyForm()
    page = list_page(request, ApiKey.objects.filter(tenant_id=request.tenant.pk).order_by("-created_at", "pk"))
    return render(
        request, "dashboard/api_keys.html",
        {"nav": "api_keys", "form": form, "page": page, "keys": page, "created_key": created_key},
    )


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
]
