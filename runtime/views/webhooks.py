"""Webhooks in the dashboard, for admins: which API key pushes its turns where, the secret shown
once (at creation and at each rotation), and every delivery attempt."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from asixto.errors import ApplicationError
from runtime import webhooks
from runtime.forms import WebhookForm, WebhookUrlForm
from runtime.models import ChannelWebhook, WebhookDelivery
from tenants.access import admin_page
from tenants.models import ApiKey

RECENT_DELIVERIES = 100


def _page(request, *, form=None, secret=None, secret_for=None, status=200):
    keys = list(webhooks.tenant_keys(tenant_id=request.tenant.pk))
    hooks = list(ChannelWebhook.objects.all())
    taken = {hook.api_key_id for hook in hooks}
    form = form or WebhookForm(keys=[key for key in keys if key.pk not in taken])
    names = {key.pk: key for key in ApiKey.objects.filter(tenant_id=request.tenant.pk)}
    for hook in hooks:
        hook.key = names.get(hook.api_key_id)
    deliveries = WebhookDelivery.objects.select_related("turn", "message").order_by("-created_at", "-id")
    shown = request.GET.get("webhook")
    if shown and shown in {str(hook.pk) for hook in hooks}:
        deliveries = deliveries.filter(webhook_id=shown)
    return render(request, "runtime/webhooks.html", {
        "nav": "webhooks", "form": form, "hooks": hooks, "secret": secret, "secret_for": secret_for,
        "deliveries": deliveries[:RECENT_DELIVERIES], "has_free_keys": len(taken) < len(keys),
    }, status=status)


@admin_page
def webhooks_page(request):
    if request.method != "POST":
        return _page(request)
    taken = set(ChannelWebhook.objects.values_list("api_key_id", flat=True))
    keys = [key for key in webhooks.tenant_keys(tenant_id=request.tenant.pk) if key.pk not in taken]
    form = WebhookForm(request.POST, keys=keys)
    if form.is_valid():
        key = next(key for key in keys if str(key.pk) == form.cleaned_data["api_key"])
        try:
            webhook, secret = webhooks.webhook_create(api_key=key, url=form.cleaned_data["url"])
        except ApplicationError as exc:
            for field, errors in exc.fields.items():
                for error in errors:
                    form.add_error(field if field in form.fields else None, error)
        else:
            # Rendered, not redirected: this response is the only place the secret ever appears.
            return _page(request, secret=secret, secret_for=webhook)
    return _page(request, form=form)


@admin_page
@require_POST
def webhook_change(request, pk):
    """Change the URL (a `url` field) or switch the webhook on or off (a `toggle` field)."""
    webhook = get_object_or_404(ChannelWebhook.objects.all(), pk=pk)
    if "toggle" in request.POST:
        webhooks.webhook_update(webhook=webhook, data={"enabled": not webhook.enabled})
        return redirect("dashboard:webhooks")
    form = WebhookUrlForm(request.POST)
    try:
        if not form.is_valid():
            raise ApplicationError(form.errors["url"][0])
        webhooks.webhook_update(webhook=webhook, data={"url": form.cleaned_data["url"]})
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, _("Webhook saved."))
    return redirect("dashboard:webhooks")


@admin_page
@require_POST
def webhook_rotate(request, pk):
    webhook = get_object_or_404(ChannelWebhook.objects.all(), pk=pk)
    return _page(request, secret=webhooks.webhook_rotate_secret(webhook=webhook), secret_for=webhook)


@admin_page
@require_POST
def webhook_delete(request, pk):
    get_object_or_404(ChannelWebhook.objects.all(), pk=pk).delete()
    messages.success(request, _("Webhook removed."))
    return redirect("dashboard:webhooks")
