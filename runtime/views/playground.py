"""The playground: an admin talks to the agent through the same channel service a channel uses
(`runtime.channel`), and watches the turn's status events and reply arrive live over SSE.

`turn_calls` lists the tool calls of a turn (name, outcome, a link to the call record) for the
playground's transcript (issue 20). `turn_events` is the dashboard's variant of the API's event stream: the same events, for a
signed-in user of the tenant instead of an API key."""

import math

from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from rest_framework.exceptions import Throttled

from asixto.errors import error_body
from runtime import channel, events, limits, turn_errors
from runtime.forms import PlaygroundMessageForm
from runtime.models import Conversation, Turn, TurnStep
from tools.models import ToolCall
from runtime.stream_slots import StreamsFull
from tenants.access import admin_page, tenant_page

PLAYGROUND_CHANNEL = "playground"


def model_configured(tenant) -> bool:
    return bool(tenant.model_base_url and tenant.model_name)


@admin_page
def playground_page(request):
    return render(request, "runtime/playground.html", {
        "nav": "playground", "form": PlaygroundMessageForm(initial={"language": request.tenant.language}),
        "model_configured": model_configured(request.tenant),
        # Why a turn failed, in the reader's language, for the codes the event stream sends.
        "turn_errors": {code: str(text) for code, text in turn_errors.MESSAGES.items()},
    })


@admin_page
@require_POST
def playground_post(request):
    """Post the admin's message as a channel would: 202 with the turn and where to watch it."""
    form = PlaygroundMessageForm(request.POST)
    if not form.is_valid():
        fields = {name: [str(error) for error in errors] for name, errors in form.errors.items()}
        return JsonResponse(error_body("invalid", _("The message has invalid fields."), fields), status=400)
    data = form.cleaned_data
    if data["conversation"]:
        # Only the playground's own conversations: a real customer's never gets a test message.
        # (A channel may name its own conversations "playground" too: those belong to its integration.)
        conversation = get_object_or_404(Conversation.objects.all(), pk=data["conversation"], channel_name=PLAYGROUND_CHANNEL,
                                         integration__isnull=True)
    else:
        conversation = channel.conversation_start(data={
            "channel_kind": data["channel_kind"] or "chat", "channel_name": PLAYGROUND_CHANNEL,
            "customer_ref": f"playground:{request.user.username}"[:200], "language": (data["language"] or "").lower(),
        })
    try:
        # The fair share a channel's post gets (issue 19, M4): the tenant's turns in flight.
        turn = channel.message_post(conversation=conversation, text=data["text"],
                                    admit=lambda: limits.admit_message(api_key_id=None)).turn
    except Throttled as busy:
        response = JsonResponse(error_body("throttled", str(busy.detail)), status=429)
        response["Retry-After"] = str(math.ceil(busy.wait or 1))
        return response
    return JsonResponse({
        "turn": str(turn.pk), "conversation": str(conversation.pk),
        "events_url": reverse("dashboard:turn_events", args=[turn.pk]),
        "calls_url": reverse("dashboard:turn_calls", args=[turn.pk]),
        "conversation_url": reverse("dashboard:conversation", args=[conversation.pk]),
    }, status=202)


@admin_page
def turn_calls(request, pk):
    """The tool calls of one turn, in the order they were made (the turn's own tool steps)."""
    turn = get_object_or_404(Turn.objects.only("id"), pk=pk)
    outcomes = dict(ToolCall.Outcome.choices)
    steps = TurnStep.objects.filter(turn=turn, kind=TurnStep.Kind.TOOL).order_by("index")
    return JsonResponse({"calls": [{
        "tool": step.tool_name, "outcome": step.outcome, "outcome_label": str(outcomes.get(step.outcome, step.outcome or "…")),
        "url": reverse("dashboard:call", args=[step.record_id]) if step.record_id else "",
    } for step in steps]})


@tenant_page
def turn_events(request, pk):
    """Server-sent events of one turn of this tenant (R9): status events, then the reply."""
    turn = get_object_or_404(Turn.objects.only("id"), pk=pk)
    try:
        return events.stream_response(request, turn_id=turn.pk)
    except StreamsFull as full:
        busy = HttpResponse(full.message, status=429, content_type="text/plain; charset=utf-8")
        busy["Retry-After"] = str(full.retry_after)
        return busy
