"""The settings page's "Test connection" button (issue 20): one small request to the model
endpoint as saved, its outcome shown on the settings page (admins only, T4)."""

from django.contrib import messages
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from rest_framework.exceptions import Throttled

from asixto.web_calls import web_call_slot
from runtime.model_test import model_connection_test
from tenants.access import admin_page
from tenants.models import Tenant


@admin_page
@require_POST
def model_test(request):
    try:
        with web_call_slot():
            result = model_connection_test(tenant=Tenant.objects.get(pk=request.tenant.pk))
    except Throttled as busy:
        messages.error(request, str(busy.detail))
        return redirect("dashboard:settings")
    if result.ok:
        messages.success(request, result.message)
    else:
        messages.error(request, _("Connection test failed (%(code)s): %(message)s %(detail)s") % {
            "code": result.code, "message": result.message, "detail": result.detail})
    return redirect("dashboard:settings")
