"""The dashboard's overview (A2): one page that answers "is everything fine?" — servers by sync
state, tools by verdict, calls and failures in the last 24 hours, the latest contract
violations — each number linking to the list behind it, and the problems of the catalog and
its calls named one by one, each with a link. Reads only, in the tenant's schema. The page
itself (runtime/views/overview.py) adds the agent's own problems (its model)."""

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from tools.models import McpServer, Tool, ToolCall
from tools.selectors import agent_ready_tools
from tools.stats import FAILURES  # the tool's or the platform's failures, not business errors

WINDOW = timedelta(hours=24)
LATEST_VIOLATIONS = 5


@dataclass(frozen=True)
class Problem:
    """One thing that needs attention: what, and a link to where it is looked at or fixed."""

    text: str
    url: str
    link: str


def _counts(queryset, field, choices):
    found = dict(queryset.values_list(field).annotate(n=Count("pk")).values_list(field, "n"))
    return [{"value": value, "label": label, "count": found.get(value, 0)} for value, label in choices]


def _count_of(rows, value):
    return sum(row["count"] for row in rows if row["value"] == value)


def catalog_problems(*, servers, tools, by_outcome, calls, can_register) -> list[Problem]:
    """The catalog's and the calls' problems, most blocking first: no tool an agent may use,
    servers whose sync failed, blocked tools, failed calls by outcome, contract violations."""
    problems = []
    if not agent_ready_tools().exists():
        if sum(row["count"] for row in servers):
            problems.append(Problem(_("The agent has no tool it may use: none is certified and enabled."),
                                    reverse("dashboard:catalog"), _("Tool catalog")))
        else:
            problems.append(Problem(_("The agent has no tool: no MCP server is registered."),
                                    reverse("dashboard:server_new" if can_register else "dashboard:servers"),
                                    _("Register the first one") if can_register else _("MCP servers")))
    if failed := _count_of(servers, McpServer.SyncStatus.ERROR):
        problems.append(Problem(ngettext("%(n)s server failed to sync.", "%(n)s servers failed to sync.", failed) % {"n": failed},
                                reverse("dashboard:servers"), _("MCP servers")))
    if blocked := _count_of(tools, Tool.Certification.BLOCKED):
        problems.append(Problem(ngettext("%(n)s tool is blocked by certification.", "%(n)s tools are blocked by certification.",
                                         blocked) % {"n": blocked},
                                reverse("dashboard:catalog") + "?certification=blocked", _("Findings")))
    calls_url = reverse("dashboard:calls")
    for row in by_outcome:
        if row["value"] in FAILURES:
            problems.append(Problem(
                ngettext("%(n)s call failed in the last 24 hours: %(outcome)s.",
                         "%(n)s calls failed in the last 24 hours: %(outcome)s.", row["count"])
                % {"n": row["count"], "outcome": row["label"]},
                f"{calls_url}?outcome={row['value']}", _("Tool calls")))
    if calls["violations"]:
        problems.append(Problem(
            ngettext("%(n)s call broke the tool contract in the last 24 hours.",
                     "%(n)s calls broke the tool contract in the last 24 hours.", calls["violations"]) % {"n": calls["violations"]},
            f"{calls_url}?violations=true", _("Contract violations")))
    return problems


def overview(*, now=None, can_register=False) -> dict:
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
    unsynced = sum(row["count"] for row in servers if row["value"] not in (McpServer.SyncStatus.OK, McpServer.SyncStatus.ERROR))
    return {
        "servers": servers, "server_total": sum(row["count"] for row in servers), "failing_servers": failing_servers,
        "unsynced": unsynced,
        "tools": tools, "tool_total": sum(row["count"] for row in tools),
        "calls": calls, "by_outcome": by_outcome, "latest_violations": latest,
        "problems": catalog_problems(servers=servers, tools=tools, by_outcome=by_outcome, calls=calls, can_register=can_register),
    }
