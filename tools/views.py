"""Dashboard pages of the tools app (A2): servers, the catalog with its certification, a tool's
findings and probes, catalog versions and their diffs."""

import json
import uuid

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from rest_framework.exceptions import Throttled

from asixto.errors import ApplicationError
from asixto.web_calls import web_call_slot
from tenants.access import admin_page, tenant_page
from tenants.pages import list_page
from tools import console as console_help
from tools import mcp, selectors, services
from tools.api.serializers import ToolCallFilterSerializer, ToolFilterSerializer
from tools.contract_views import urlpatterns as contract_urlpatterns
from tools.forms import ConsoleForm, SampleArgumentsForm, ServerForm
from tools.gateway import CallContext, call_tool
from tools.mcp.errors import render_error
from tools.models import ToolCall
from tools.offerings import server_offerings
from tools.server_quota import server_register
from tools.stats import PERIODS, ToolStats, period_of, tool_stats

TOOL_FILTER_CHOICES = 200


# Service field names that the server form shows under another name.
FORM_FIELD = {"args": "args_text", "auth_headers": "headers_text", "env": "env_text"}


def _apply_service_errors(form, exc: ApplicationError):
    for field, errors in exc.fields.items():
        field = FORM_FIELD.get(field, field)
        target = field if field in form.fields else None
        for error in errors:
            form.add_error(target, error)
    if not exc.fields:
        form.add_error(None, exc.message)


@tenant_page
def servers_page(request):
    page = list_page(request, selectors.servers())
    return render(request, "tools/servers.html", {
        "nav": "servers", "page": page, "servers": page, "server_quota": request.tenant.effective_server_quota,
    })


@admin_page
def server_edit(request, pk=None):
    server = get_object_or_404(selectors.servers(), pk=pk) if pk else None
    form = ServerForm(request.POST or None, instance=server)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                if server:
                    server = services.server_update(server=server, data=form.service_data())
                    services.server_queue_sync(server=server)
                else:
                    server = server_register(data=form.service_data())
        except ApplicationError as exc:
            _apply_service_errors(form, exc)
        else:
            messages.success(request, _("Server saved. Its catalog is being synced."))
            return redirect("dashboard:servers")
    return render(request, "tools/server_form.html", {"nav": "servers", "form": form, "server": server})


@admin_page
@require_POST
def server_sync_now(request, pk):
    services.server_queue_sync(server=get_object_or_404(selectors.servers(), pk=pk))
    return redirect("dashboard:servers")


@admin_page
@require_POST
def server_delete(request, pk):
    server = get_object_or_404(selectors.servers(), pk=pk)
    server.delete()
    messages.success(request, _("Server %(slug)s removed.") % {"slug": server.slug})
    return redirect("dashboard:servers")


@tenant_page
def server_status(request, pk):
    """Polled by the servers page while a sync runs."""
    server = get_object_or_404(selectors.servers(), pk=pk)
    return JsonResponse({
        "status": server.sync_status, "label": server.get_sync_status_display(), "error": server.sync_error,
        "tools": server.tools.filter(removed_in__isnull=True).count(),
    })


@tenant_page
def catalog_page(request):
    filters = ToolFilterSerializer(data=request.GET)
    # A bad filter (unknown value, NUL bytes) filters nothing rather than failing the page.
    tools = selectors.tools(**filters.validated_data) if filters.is_valid() else selectors.tools()
    page = list_page(request, tools)
    shared = selectors.with_shared_findings(page)  # warnings most of a server's tools share: once (issue 8)
    shared_by_server = [(server, shared[server.pk]) for server in selectors.servers() if server.pk in shared]
    period, since, until = period_of(request.GET.get("period"))
    figures = tool_stats(tool_ids=[tool.pk for tool in page], since=since, until=until)
    for tool in page:
        tool.stats = figures.get(tool.pk, ToolStats())
    return render(request, "tools/catalog.html", {
        "nav": "catalog", "page": page, "tools": page, "servers": selectors.servers(), "shared_findings": shared_by_server,
        "period": period, "periods": PERIODS,
    })


def _console_call(request, tool, console) -> dict:
    """The console's POST: refuse what cannot be sent, ask before a real write, else call."""
    schema = tool.definition.get("inputSchema") or {}
    if console_help.unavailable_reason(tool) or not console.is_valid() or request.POST.get("cancel"):
        return {}  # a cancelled confirmation shows the form again with the same arguments
    arguments = console.cleaned_data["arguments"]
    unfilled = console_help.unfilled_fields(arguments, schema)
    if unfilled:
        console.add_error("arguments", _("Fill in the required fields first: %(names)s.") % {"names": ", ".join(unfilled)})
        return {}
    if console_help.needs_confirmation(tool) and request.POST.get("confirmed") != "yes":
        return {"confirm": True}
    context = CallContext(
        channel=console.cleaned_data["channel"], idempotency_key=f"console-{uuid.uuid4().hex}",
        conversation_id="console", source=ToolCall.Source.CONSOLE,
    )
    try:
        with web_call_slot():
            outcome = call_tool(tool_id=tool.pk, arguments=arguments, context=context)  # its record is stored when it returns
    except Throttled as busy:
        console.add_error(None, str(busy.detail))
        return {}
    return {"outcome": outcome, "outcome_view": outcome_view(outcome)}


def outcome_view(outcome) -> dict:
    """The outcome in the reader's words: label, what it means, the error in their language."""
    label = ToolCall.Outcome(outcome.outcome).label if outcome.outcome in ToolCall.Outcome.values else outcome.outcome
    error = render_error(outcome.error_code, outcome.error_params) if outcome.error_code else ""
    return {"label": label, "help": console_help.OUTCOME_HELP.get(outcome.outcome, ""), "error": error}


@tenant_page
def tool_page(request, pk):
    tool = get_object_or_404(selectors.tools(include_removed=True), pk=pk)
    initial = {"sample_arguments": json.dumps(tool.sample_arguments, ensure_ascii=False, indent=2) if tool.sample_arguments is not None else ""}
    form = SampleArgumentsForm(request.POST if "sample_arguments" in request.POST else None, initial=initial)
    schema = tool.definition.get("inputSchema") or {}
    skeleton = console_help.arguments_skeleton(schema)
    console = ConsoleForm(
        request.POST if "arguments" in request.POST else None,
        initial={"arguments": json.dumps(skeleton, ensure_ascii=False, indent=2), "channel": "chat"},
    )
    console_state = {}
    if request.method == "POST" and "arguments" in request.POST:
        if not request.user.is_tenant_admin:
            raise PermissionDenied
        console_state = _console_call(request, tool, console)
        if "outcome" in console_state:
            # A fresh form with what was sent: a confirmation never carries over to the next call.
            console = ConsoleForm(initial={"arguments": request.POST["arguments"], "channel": console.cleaned_data["channel"]})
    elif request.method == "POST":
        if not request.user.is_tenant_admin:
            raise PermissionDenied
        if form.is_valid():
            services.tool_set_sample_arguments(tool=tool, sample_arguments=form.cleaned_data["sample_arguments"])
            if "probe" in request.POST and tool.sample_arguments is not None:
                try:
                    services.tool_probe(tool=tool)
                    messages.success(request, _("Probe finished."))
                except (ApplicationError, mcp.McpError) as exc:
                    messages.error(request, getattr(exc, "message", str(exc)))
            else:
                messages.success(request, _("Sample arguments saved."))
            return redirect("dashboard:tool", pk=tool.pk)
    definition = json.dumps(tool.definition, ensure_ascii=False, indent=2)
    violations = selectors.tool_calls(tool_id=tool.pk, violations_only=True)[:20]
    period, since, until = period_of(request.GET.get("period"))
    return render(request, "tools/tool.html", {
        "nav": "catalog", "tool": tool, "form": form, "definition": definition, "console": console,
        "stats": tool_stats(tool_ids=[tool.pk], since=since, until=until).get(tool.pk, ToolStats()),
        "period": period, "periods": PERIODS,
        "violations": violations, "fields": console_help.field_guide(schema), "verb": console_help.tool_verb(tool),
        "needs_confirmation": console_help.needs_confirmation(tool), "unavailable": console_help.unavailable_reason(tool),
        **console_state,
    })


@tenant_page
def calls_page(request):
    """Call records (G9) for admins and support staff, newest first, with filters."""
    filters = ToolCallFilterSerializer(data=request.GET)
    filters.is_valid()
    calls = selectors.tool_calls(**filters.validated_data).select_related("tool")
    # The tool filter is a list while it stays short; past that, a field for a tool's id.
    names = selectors.tools().select_related(None).prefetch_related(None).only("pk", "prefixed_name")
    tools = list(names[:TOOL_FILTER_CHOICES + 1])
    return render(request, "tools/calls.html", {
        "nav": "calls", "page": list_page(request, calls), "outcomes": ToolCall.Outcome.choices,
        "tools": tools[:TOOL_FILTER_CHOICES], "tools_listed": len(tools) <= TOOL_FILTER_CHOICES,
    })


@tenant_page
def call_page(request, pk):
    call = get_object_or_404(selectors.tool_calls(), pk=pk)
    times = call.attempt_ms or []
    attempts = [
        {"number": number, "request_id": request_id, "ms": times[number - 1] if number <= len(times) else None}
        for number, request_id in enumerate(call.request_ids or [], start=1)
    ]
    return render(request, "tools/call.html", {
        "nav": "calls", "call": call, "attempts": attempts,
        "arguments": json.dumps(call.arguments, ensure_ascii=False, indent=2),
        "result": json.dumps(call.result, ensure_ascii=False, indent=2) if call.result is not None else "",
        "outcome_help": console_help.OUTCOME_HELP.get(call.outcome, ""),
    })


@admin_page
def violations_page(request):
    """Contract violations per tool, for admins (G5, G7): which tools break the contract, how often."""
    page = list_page(request, selectors.violation_counts())
    return render(request, "tools/violations.html", {"nav": "violations", "page": page, "rows": page})


@admin_page
@require_POST
def tool_toggle(request, pk):
    tool = get_object_or_404(selectors.tools(), pk=pk)
    services.tool_set_enabled(tool=tool, enabled=not tool.enabled)
    target = request.POST.get("next", "")
    # Only back to a page of this dashboard: never another site, never `javascript:`.
    if target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(target)
    return redirect("dashboard:catalog")


@tenant_page
def server_offerings_page(request, pk):
    """The server's resources and prompts as it lists them now (issue 20), read-only; a failure
    is shown with its message instead of the list it stopped."""
    server = get_object_or_404(selectors.servers(), pk=pk)
    sections = []
    for kind, title in (("resources", _("Resources")), ("prompts", _("Prompts"))):
        try:
            with web_call_slot():
                sections.append({"kind": kind, "title": title, "offered": server_offerings(server=server, kind=kind)})
        except (mcp.McpError, ApplicationError) as exc:
            sections.append({"kind": kind, "title": title, "error": exc.message, "code": getattr(exc, "code", "")})
        except Throttled as busy:
            sections.append({"kind": kind, "title": title, "error": str(busy.detail), "code": "throttled"})
    return render(request, "tools/server_offerings.html", {"nav": "servers", "server": server, "sections": sections})


@tenant_page
def versions_page(request, pk):
    server = get_object_or_404(selectors.servers(), pk=pk)
    page = list_page(request, selectors.catalog_versions(server=server).order_by("-number"))
    return render(request, "tools/versions.html", {"nav": "servers", "server": server, "page": page, "versions": page})


@tenant_page
def version_page(request, pk):
    version = get_object_or_404(selectors.catalog_versions(), pk=pk)
    return render(request, "tools/version.html", {"nav": "servers", "version": version})


urlpatterns = [
    path("servers/", servers_page, name="servers"),
    path("servers/new/", server_edit, name="server_new"),
    path("servers/<uuid:pk>/", server_edit, name="server_edit"),
    path("servers/<uuid:pk>/sync/", server_sync_now, name="server_sync"),
    path("servers/<uuid:pk>/delete/", server_delete, name="server_delete"),
    path("servers/<uuid:pk>/status/", server_status, name="server_status"),
    path("servers/<uuid:pk>/versions/", versions_page, name="server_versions"),
    path("servers/<uuid:pk>/offerings/", server_offerings_page, name="server_offerings"),
    path("catalog/", catalog_page, name="catalog"),
    path("catalog/versions/<uuid:pk>/", version_page, name="catalog_version"),
    path("tools/<uuid:pk>/", tool_page, name="tool"),
    path("tools/<uuid:pk>/toggle/", tool_toggle, name="tool_toggle"),
    path("calls/", calls_page, name="calls"),
    path("calls/<uuid:pk>/", call_page, name="call"),
    path("violations/", violations_page, name="violations"),
    *contract_urlpatterns,
]
