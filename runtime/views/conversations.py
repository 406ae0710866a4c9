"""Conversations for admins and support staff: a filtered, paginated list, and one conversation
with its turns — messages, status events, tool calls, truncations, errors, webhook attempts."""

from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, render

from runtime import reports
from runtime.forms import ConversationFilterForm
from runtime.models import Conversation, Turn
from tenants.access import tenant_page

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
    })
