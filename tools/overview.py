"""The dashboard's overview (A2): one page that answers "is everything fine?" — servers by sync
state, tools by verdict, calls and failures in the last 24 hours, the latest contract
violations — each number linking to the list behind it. Reads only, in the tenant's schema."""

from datetime import timedelta

from django.db.models import Count, Q
from django.shortcuts import render
from django.urls import path
from django.utils import timezone

from tenants.access import tenant_page
from tools.models import McpServer, Tool, ToolCall
from tools.stats import FAILURES  # the tool's or the platform's failures, not business errors

WINDOW = timedelta(hours=24)
LATEST_VIOLATIONS = 5


def _counts(queryset, field, choices):
    found = dict(queryset.values_list(field).annotate(n=Count("pk")).values_list(field, "n"))
    return [{"value": value, "label": label, "count": found.get(value, 0)} for value, label in choices]


def overview(*, now=None) -> dict:
    """Everything the overview shows, as plain values."""
    since = (now or timezone.now()) - WINDOW
    servers = _counts(McpServer.objects.all(), "sync_status", McpServer.SyncStatus.choices)
    failing_servers = list(McpServer.objects.filter(sync_status=McpServer.SyncStatus.ERROR).order_by("slug")[:5])
    tools = _counts(Tool.objects.filter(removed_in__isnull=True), "certification", Tool.Certification.choices)
    recent = ToolCall.objects.filter(started_at__gte=since)
    calls = recent.aggregate(
        total=Count("pk"), failed=Count("pk", filter=Q(outcome__in=FAILURES)),
        violations=Count("pk", filter=~Q(violations=[])),
    )
    by_outcome = [
        row for row in _counts(recent, "outcome", ToolCall.Outcome.choices) if row["count"] and row["value"] != ToolCall.Outcome.OK
    ]
    latest = list(ToolCall.objects.exclude(violations=[]).order_by("-started_at")[:LATEST_VIOLATIONS])
    attention = (
        sum(row["count"] for row in servers if row["value"] == McpServer.SyncStatus.ERROR)
        + sum(row["count"] for row in tools if row["value"] == Tool.Certification.BLOCKED)
        + calls["failed"] + calls["violations"]
    )
    unsynced = sum(row["count"] for row in servers if row["value"] not in (McpServer.SyncStatus.OK, McpServer.SyncStatus.ERROR))
    return {
        "servers": servers, "server_total": sum(row["count"] for row in servers), "failing_servers": failing_servers,
        "unsynced": unsynced,
        "tools": tools, "tool_total": sum(row["count"] for row in tools),
        "calls": calls, "by_outcome": by_outcome, "latest_violations": latest, "attention": attention,
    }


@tenant_page
def home(request):
    return render(request, "dashboard/home.html", {"nav": "home", **overview()})


urlpatterns = [path("", home, name="home")]
