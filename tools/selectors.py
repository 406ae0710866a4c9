"""Reads of the tools app. Every query runs in the current tenant's schema (T1)."""

from django.db.models import Count, Max, Prefetch

from tools.models import CatalogVersion, Finding, McpServer, Tool, ToolCall


def servers():
    return McpServer.objects.all()


def tools(*, server_slug=None, certification=None, include_removed=False):
    queryset = Tool.objects.select_related("server").prefetch_related(
        Prefetch("findings", queryset=Finding.objects.order_by("severity", "rule"))
    )
    if not include_removed:
        queryset = queryset.filter(removed_in__isnull=True)
    if server_slug:
        queryset = queryset.filter(server__slug=server_slug)
    if certification:
        queryset = queryset.filter(certification=certification)
    return queryset.order_by("server__slug", "position")


def catalog_versions(*, server=None):
    queryset = CatalogVersion.objects.select_related("server")
    return queryset.filter(server=server) if server else queryset


def tool_calls(*, tool_id=None, outcome=None, turn_id=None, violations_only=False):
    queryset = ToolCall.objects.all()
    if tool_id:
        queryset = queryset.filter(tool_id=tool_id)
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
