"""Conversations for admins and support staff: a filtered, paginated list, and one conversation
with its turns — messages, status events, tool calls, truncations, errors, webhook attempts — and
its reminders and follow-ups (admins cancel a pending one); support staff and admins correct a
turn's routing (issue 18)."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from asixto.errors import ApplicationError
from runtime import reports
from runtime.builtins import delivery
from runtime.builtins.models import FollowUp, Reminder
from runtime.forms import ConversationFilterForm
from runtime.models import Conversation, Turn
from tenants.access import admin_page, tenant_page
from tenants.models import ApiKey
from tools import routing_examples
from tools.models import Tool

PAGE_SIZE = 50
MAX_TOOL_CHOICES = 1000


@tenant_page
def conversations_page(request):
    form = ConversationFilterForm(request.GET or None)
    if form.is_bound and not form.is_valid():  # the errors are shown with an empty list, not everything (A4)
        conversations = Conversation.objects.none()
    else:
        filters = form.cleaned_data if form.is_bound else {}
        conversations = reports.conversation_list(**{name: value for name, value in filters.items() if value})
    page = Paginator(conversations, PAGE_SIZE).get_page(request.GET.get("page"))
    labels = dict(Turn.Status.choices)
    for conversation in page:
        conversation.last_status_label = labels.get(conversation.last_status, "")
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "runtime/conversations.html", {
        "nav": "conversations", "form": form, "page": page, "query": query.urlencode(),
        "channel_names": reports.channel_names(),
    }, status=400 if form.errors else 200)


@tenant_page
def conversation_page(request, pk):
    conversation = get_object_or_404(Conversation.objects.all(), pk=pk)
    # The integration that started it (tenants.ApiKey is in the public schema: the tenant filter is
    # the isolation), named by its newest key: the channel keys that read and post to it.
    keys = ApiKey.objects.filter(tenant_id=request.tenant.pk, integration=conversation.integration) \
        if conversation.integration else ApiKey.objects.none()
    return render(request, "runtime/conversation.html", {
        "nav": "conversations", "conversation": conversation,
        "integration_key": keys.order_by("-created_at", "pk").first(),
        "integration_active": keys.usable().exists(),
        "turns": reports.conversation_turns(conversation=conversation),
        "scheduled": reports.conversation_scheduled(conversation=conversation),
        "routing_tools": list(Tool.objects.filter(removed_in__isnull=True).order_by("prefixed_name")
                              .values_list("prefixed_name", flat=True)[:MAX_TOOL_CHOICES]),
    })


@tenant_page
@require_POST
def routing_correct(request, pk, turn):
    """Support staff (and admins) mark a turn's routing wrong and say which tool its message needed, or
    none: the message becomes an example of this tenant's routing (issue 18), with who and when."""
    found = get_object_or_404(Turn.objects.select_related("message"), pk=turn, conversation_id=pk)
    choice = request.POST.get("tool", "")
    try:
        routing_examples.routing_correct(turn_id=found.pk, text=found.message.text, tool_name=choice or None,
                                         who=str(request.user))
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, _("Thanks: routing learns from this correction from the next message on."))
    return redirect(reverse("dashboard:conversation", args=[pk]) + f"#turn-{found.pk}")


@admin_page
@require_POST
def scheduled_cancel(request, pk, kind, item):
    """Cancel a pending reminder or follow-up of the conversation (R12)."""
    model = {"reminder": Reminder, "follow_up": FollowUp}.get(kind)
    if model is None:
        raise Http404
    found = get_object_or_404(model.objects.all(), pk=item, conversation_id=pk)
    try:
        delivery.scheduled_cancel(item=found)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, _("Cancelled: it will not be sent."))
    return redirect(reverse("dashboard:conversation", args=[pk]) + "#scheduled")
