"""The dashboard's home (A2): the overview of the catalog and its calls (tools/overview.py) and
the agent's own problems — no model, or a model that fails — so "everything is fine" is said
only when nothing keeps the agent from answering."""

from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from runtime.models import Turn
from runtime.turn_errors import is_model_failure, turn_error_text
from runtime.views.playground import model_configured
from tenants.access import tenant_page
from tools.overview import WINDOW, Problem, overview

def agent_problems(*, tenant, is_admin: bool, now=None) -> list[Problem]:
    """No model in the agent settings; or the latest turn of the last 24 hours failed on the model."""
    settings_link = (reverse("dashboard:settings"), _("Agent settings")) if is_admin else (reverse("dashboard:conversations"), _("Conversations"))
    if not model_configured(tenant):
        return [Problem(_("The agent has no model: every customer message is answered with an apology."), *settings_link)]
    since = (now or timezone.now()) - WINDOW
    latest = Turn.objects.filter(finished_at__gte=since).order_by("-finished_at").first()
    if latest is not None and latest.status == Turn.Status.FAILED and is_model_failure(latest.error_code):
        url = reverse("dashboard:conversation", args=[latest.conversation_id]) + f"#turn-{latest.pk}"
        return [Problem(_("The model failed on the latest turn: %(reason)s") % {"reason": turn_error_text(latest.error_code)},
                        url, _("The turn"))]
    return []

@tenant_page
def home(request):
    is_admin = request.user.is_tenant_admin
    data = overview(can_register=is_admin)
    data["problems"] = agent_problems(tenant=request.tenant, is_admin=is_admin) + data["problems"]
    return render(request, "dashboard/home.html", {"nav": "home", "attention": len(data["problems"]), **data})

