"""Reads of the tools app. Every query runs in the current tenant's schema (T1)."""

import json

from django.db.models import Count, F, Max, Prefetch, Q

from tools.models import CatalogVersion, Finding, McpServer, Tool, ToolCall
from tools.texts import render_text


def servers():
    return McpServer.objects.all()


def tools(*, server_slug=None, certification=None, level=None, text=None, include_removed=False):
    """The catalog, filtered by server, verdict, level and text (the model-visible name, or the
    words of the description the model sees)."""
    queryset = Tool.objects.select_related("server").prefetch_related(
        Prefetch("findings", queryset=Finding.objects.order_by("severity", "rule"))
    )
    if not include_removed:
        queryset = queryset.filter(removed_in__isnull=True)
    if server_slug:
        queryset = queryset.filter(server__slug=server_slug)
    if certification:
        queryset = queryset.filter(certification=certification)
    if level:
        queryset = queryset.filter(level=level)
    if text:
        queryset = queryset.filter(Q(prefixed_name__icontains=text) | Q(definition__description__icontains=text))
    return queryset.order_by("server__slug", "position")


def agent_ready_tools():
    """Tools an agent may be offered (R2, M5): certified for their current definition, enabled,
    on an enabled server, still listed. Channels narrow them further by level."""
    return Tool.objects.filter(
        removed_in__isnull=True, enabled=True, server__enabled=True,
        certification=Tool.Certification.CERTIFIED, certified_hash=F("definition_hash"),
    )


def catalog_versions(*, server=None):
    queryset = CatalogVersion.objects.select_related("server")
    return queryset.filter(server=server) if server else queryset


def tool_calls(*, tool_id=None, tool_name=None, outcome=None, turn_id=None, violations_only=False):
    queryset = ToolCall.objects.all()
    if tool_id:
        queryset = queryset.filter(tool_id=tool_id)
    if tool_name:
        queryset = queryset.filter(tool_name=tool_name)
    if outcome:
        queryset = queryset.filter(outcome=outcome)
    if turn_id:
        queryset = queryset.filter(turn_id=turn_id)
    if violations_only:
        queryset = queryset.exclude(violations=[])
    return queryset.order_by("-started_at")


def violation_counts():
    """Per tool: calls with contract violations, and the last one."""
    return (
        ToolCall.objects.exclude(violations=[])
        .values("tool_id", "tool_name")
        .annotate(calls=Count("id"), last=Max("started_at"))
        .order_by("-calls", "tool_name")
    )


# A warning is the server's (shown once, not on every tool) when at least this many live
# tools and more than half of them share it (issue 8: 50 of 51 tools, one row).
SHARED_MIN_TOOLS = 3


def shared_warnings(*, server_ids) -> dict:
    """Server id → the definition warnings most of its live tools share: one entry each, with
    its rule, message and hint in the active language, and how many tools share it. Grouped on
    the stored codes and parameters (language-neutral)."""
    totals = dict(
        Tool.objects.filter(server_id__in=list(server_ids), removed_in__isnull=True)
        .values_list("server_id").annotate(total=Count("id"))
    )
    groups = (
        Finding.objects.filter(
            server_id__in=list(totals), tool__removed_in__isnull=True, tool__isnull=False,
            severity=Finding.Severity.WARNING, source=Finding.Source.DEFINITION,
        )
        .values("server_id", "rule", "message_code", "message_params", "hint_code", "hint_params")
        .annotate(count=Count("tool", distinct=True))
        .order_by("server_id", "rule", "-count")
    )
    shared = {}
    for group in groups:
        total = totals[group["server_id"]]
        if group["count"] >= SHARED_MIN_TOOLS and group["count"] * 2 > total:
            shared.setdefault(group["server_id"], []).append({
                **group, "total": total, "key": finding_key(group),
                "message": render_text(group["message_code"], group["message_params"]),
                "hint": render_text(group["hint_code"], group["hint_params"]) if group["hint_code"] else "",
            })
    return shared


def finding_key(finding) -> str:
    """What makes two findings the same one, on a row or on a `values()` dict."""
    get = finding.get if isinstance(finding, dict) else lambda name: getattr(finding, name)
    return json.dumps([get("rule"), get("message_code"), get("message_params")], sort_keys=True)


def with_shared_findings(tools) -> dict:
    """Set `shown_findings` on each tool (its findings minus the server-level shared ones) and
    return the shared ones per server id (see shared_warnings)."""
    tools = list(tools)
    shared = shared_warnings(server_ids={tool.server_id for tool in tools})
    keys = {server_id: {entry["key"] for entry in entries} for server_id, entries in shared.items()}
    for tool in tools:
        hidden = keys.get(tool.server_id, set())
        tool.shown_findings = [
            f for f in tool.findings.all()
            if not (f.severity == Finding.Severity.WARNING and f.source == Finding.Source.DEFINITION and finding_key(f) in hidden)
        ]
    return shared
