"""Conversations for admins and support staff: a filtered, paginated list, and one conversation
with its turns — messages, status events, tool calls, truncations, errors, webhook attempts — and
its reminders and follow-ups (admins cancel a pending one)."""

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

PAGE_SIZE = 50


@tenant_page
def conversations_page(request):
    form = ConversationFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
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
    })


@tenant_page
def conversation_page(request, pk):
    conversation = get_object_or_404(Conversation.objects.all(), pk=pk)
    return render(request, "runtime/conversation.html", {
        "nav": "conversations", "conversation": conversation,
        "turns": reports.conversation_turns(conversation=conversation),
        "scheduled": reports.conversation_scheduled(conversation=conversation),
    })


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
