"""The dashboard's contract page of one server (A2, issue 8): its contract mode, the warnings
most of its tools share (once), and a compact table editor of the admin's overlays, one form
for many tools (verb, capabilities, model-facing description beside the server's, level, and the
sample requests routing learns from, issue 18), with "accept all suggestions" and its preview
(issue 20: which tools would change verdict, and why, before anything is saved). Writes go through
tools.overlays and tools.routing_examples, in one transaction."""

from collections import defaultdict


from django.contrib import messages
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path
from django.utils.translation import gettext as _

from asixto.errors import ApplicationError
from tenants.access import admin_page, tenant_page
from tools import overlays, routing_examples, selectors
from tools.models import McpServer, RoutingExample, Tool
from tools.rules.meta import CAPABILITIES_KEY, VERB_KEY
from tools.rules.overlay import SUGGESTED_KEY

MAX_ROWS = 500  # the most tools one server may list is bounded by ASIXTO_MAX_TOOLS_PER_SERVER too


def _rows(server):
    tools = list(selectors.tools(server_slug=server.slug)[:MAX_ROWS])
    shared = selectors.with_shared_findings(tools).get(server.pk, [])
    examples, corrections = defaultdict(list), defaultdict(int)
    for name, text, source in RoutingExample.objects.filter(tool_name__in=[t.prefixed_name for t in tools]).order_by(
            "created_at").values_list("tool_name", "text", "source"):
        if source == RoutingExample.Source.ADMIN:
            examples[name].append(text)
        else:
            corrections[name] += 1
    rows = []
    for tool in tools:
        meta = tool.definition.get("_meta") if isinstance(tool.definition.get("_meta"), dict) else {}
        rows.append({
            "tool": tool, "overlay": tool.overlay or {},
            "verb": meta.get(VERB_KEY) or "", "capabilities": ", ".join(meta.get(CAPABILITIES_KEY) or []),
            "suggested": meta.get(SUGGESTED_KEY) or [],
            "server_description": (tool.server_definition or tool.definition).get("description") or "",
            "description": (tool.overlay or {}).get("description") or "",
            "examples": "\n".join(examples[tool.prefixed_name]), "corrections": corrections[tool.prefixed_name],
        })
    return rows, shared


def _changes(post, rows) -> dict:
    """Per tool, the overlay fields the form changed (an untouched row changes nothing)."""
    changes = {}
    for row in rows:
        tool, overlay, key = row["tool"], row["overlay"], str(row["tool"].pk)
        wanted = {
            "verb": post.get(f"verb-{key}", row["verb"]).strip(),
            "capabilities": [c.strip() for c in post.get(f"capabilities-{key}", row["capabilities"]).split(",") if c.strip()],
            "description": post.get(f"description-{key}", row["description"]).strip(),
            "level": post.get(f"level-{key}", overlay.get("level", "")),
        }
        shown = {"verb": row["verb"], "capabilities": [c.strip() for c in row["capabilities"].split(",") if c.strip()],
                 "description": row["description"], "level": overlay.get("level", "")}
        changed = {field: value for field, value in wanted.items() if value != shown[field]}
        # What was shown as a suggestion and left as it is stays a suggestion, unless the row's
        # "accept" box is ticked: then it becomes the admin's own.
        if post.get(f"accept-{key}"):
            for field in row["suggested"]:
                changed.setdefault(field, wanted[field])
        if changed:
            changes[tool.pk] = changed
    return changes


def _examples_changed(post, rows) -> list[tuple[Tool, list[str]]]:
    """The rows whose sample requests (one per line) the form changed."""
    changed = []
    for row in rows:
        field = f"examples-{row['tool'].pk}"
        if field not in post:
            continue
        wanted = [line.strip() for line in post[field].splitlines() if line.strip()]
        if wanted != [line for line in row["examples"].splitlines() if line]:
            changed.append((row["tool"], wanted))
    return changed


@tenant_page
def server_contract(request, pk):
    server = get_object_or_404(selectors.servers(), pk=pk)
    rows, shared = _rows(server)
    errors = {}
    if request.method == "POST":
        if not request.user.is_tenant_admin:
            from django.core.exceptions import PermissionDenied

            raise PermissionDenied
        mode = request.POST.get("contract_mode", server.contract_mode)
        try:
            if mode and mode != server.contract_mode:
                overlays.server_set_contract_mode(server=server, mode=mode)
            changes = _changes(request.POST, rows)
            with transaction.atomic():
                if changes:
                    overlays.tools_set_overlays(server=server, changes_by_tool=changes, who=str(request.user))
                for tool, texts in _examples_changed(request.POST, rows):
                    try:
                        routing_examples.tool_set_examples(tool=tool, texts=texts, who=str(request.user))
                    except ApplicationError as exc:
                        raise ApplicationError(exc.message, fields={
                            f"{tool.prefixed_name}": [m for ms in (exc.fields or {}).values() for m in ms]}) from exc
        except ApplicationError as exc:
            errors = exc.fields or {"": [exc.message]}
            messages.error(request, exc.message)
        else:
            messages.success(request, _("Contract overlays saved; the tools were certified again."))
            return redirect("dashboard:server_contract", pk=server.pk)
    return render(request, "tools/server_contract.html", {
        "nav": "servers", "server": server, "rows": rows, "shared": shared, "errors": errors,
        "modes": McpServer.ContractMode.choices, "levels": Tool.Level.choices,
    })


@admin_page
def server_accept_suggestions(request, pk):
    """GET: which tools accepting the suggestions would change the verdict of, with the
    findings (issue 20). POST: accept them; one that would block its tool only when confirmed."""
    server = get_object_or_404(selectors.servers(), pk=pk)
    if request.method == "POST":
        accepted, held = overlays.server_accept_suggestions(
            server=server, who=str(request.user), confirmed=request.POST.getlist("confirm"))
        messages.success(request, _("Suggestions accepted for %(count)s tools.") % {"count": len(accepted)})
        if held:
            messages.warning(request, _("Not accepted, because it would block the tool: %(names)s. Review them and "
                                        "confirm to accept them anyway.") % {
                "names": ", ".join(p.tool.prefixed_name for p in held)})
        return redirect("dashboard:server_contract", pk=server.pk)
    previews = overlays.server_suggestions_preview(server=server)
    return render(request, "tools/server_suggestions.html", {
        "nav": "servers", "server": server, "changing": [p for p in previews if p.changes_verdict],
        "unchanged": sum(1 for p in previews if not p.changes_verdict),
    })


urlpatterns = [
    path("servers/<uuid:pk>/contract/", server_contract, name="server_contract"),
    path("servers/<uuid:pk>/contract/accept/", server_accept_suggestions, name="server_accept_suggestions"),
]
