"""Per-tool figures (issue 20, G9, A1, A2, A4, T1): calls, failures, failure rate, p50/p95
latency and the last failure over a chosen period, computed from the gateway's call records —
in `GET /api/v1/tools/{id}/stats`, the catalog and the tool's page."""

import uuid
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

from django.utils import timezone

from tools.models import McpServer, Tool, ToolCall

PERIOD = "since=2026-11-01T00:00:00Z&until=2026-11-08T00:00:00Z"
START = datetime(2026, 11, 2, 9, 0, tzinfo=dt_timezone.utc)


def make_tool(world, name="buscar"):
    with world.schema():
        server = McpServer.objects.get_or_create(slug="crm", defaults={
            "transport": "streamable_http", "url": "https://crm.example.com/mcp", "sync_status": "ok"})[0]
        return Tool.objects.create(server=server, name=name, prefixed_name=f"crm__{name}", position=0,
                                   definition={"name": name}, definition_hash="h", level="read", certification="certified")


def record(world, tool, outcome, duration_ms, when):
    with world.schema():
        ToolCall.objects.create(tool=tool, tool_name=tool.prefixed_name, channel="chat", idempotency_key=uuid.uuid4().hex,
                                outcome=outcome, duration_ms=duration_ms, started_at=when)


def known_calls(world, tool):
    """21 calls of 10, 20, …, 210 ms in the period: 3 failures (timeout, dropped, invalid output),
    2 business errors (answers, not failures); plus calls outside the period and of another tool."""
    outcomes = {4: "timeout", 9: "business_error", 12: "dropped", 15: "business_error", 17: "invalid_output"}
    for n in range(21):
        record(world, tool, outcomes.get(n, "ok"), 10 * (n + 1), START + timedelta(hours=n))
    record(world, tool, "timeout", 99999, START - timedelta(days=5))  # before the period
    record(world, tool, "timeout", 99999, START + timedelta(days=10))  # after it
    record(world, make_tool(world, "otra"), "timeout", 5, START)


def stats(world, tool, query=PERIOD, key=None):
    return world.api(key).get(f"/api/v1/tools/{tool.pk}/stats?{query}")


def test_the_figures_match_the_call_records(alpha):
    """Issue 20, G9: percentiles are PostgreSQL's continuous ones (p50 of 10…210 ms is 110, p95 is
    200); the rate is failures / calls; the last failure is the period's."""
    tool = make_tool(alpha)
    known_calls(alpha, tool)
    response = stats(alpha, tool)
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["calls"], body["failures"], body["failure_rate"]) == (21, 3, round(3 / 21, 4))
    assert (body["p50_ms"], body["p95_ms"]) == (110.0, 200.0)
    assert body["last_failure_at"] == (START + timedelta(hours=17)).isoformat().replace("+00:00", "Z")
    assert body["tool"] == str(tool.pk) and body["since"] == "2026-11-01T00:00:00Z"


def test_a_tool_without_calls_has_zero_calls_and_null_figures(alpha):
    """Issue 20: no call → 0 calls, no rate, no latency, no last failure (never a made-up 0 ms)."""
    tool = make_tool(alpha)
    body = stats(alpha, tool).json()
    assert body["calls"] == 0 and body["failures"] == 0
    assert (body["failure_rate"], body["p50_ms"], body["p95_ms"], body["last_failure_at"]) == (None, None, None, None)


def test_bad_input_isolation_and_scope(alpha, beta):
    """A4, T1, T2, T3: a reversed period is a 400 with its field; another tenant's tool is a 404;
    a channel key is refused."""
    tool = make_tool(alpha)
    bad = stats(alpha, tool, "since=2026-11-09T00:00:00Z&until=2026-11-01T00:00:00Z")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid" and "since" in bad.json()["error"]["fields"]
    assert stats(alpha, tool, "since=not-a-date").status_code == 400
    assert stats(beta, tool).status_code == 404
    assert stats(alpha, tool, key=alpha.channel_key).status_code == 403


def test_the_catalog_and_the_tool_page_show_the_figures_of_the_chosen_period(alpha):
    """Issue 20, A2, T4: support staff read calls, failures with their rate and p50/p95 latency;
    the period select narrows them (the last 24 hours against the last 30 days)."""
    tool = make_tool(alpha)
    now = timezone.now()
    for hours, outcome, ms in [(1, "ok", 100), (2, "timeout", 300), (50, "ok", 40), (60, "dropped", 60)]:
        record(alpha, tool, outcome, ms, now - timedelta(hours=hours))
    client = alpha.dashboard("sam")
    catalog = client.get("/catalog/?period=30d")
    [shown] = [row for row in catalog.context["tools"] if row.pk == tool.pk]
    assert (shown.stats.calls, shown.stats.failures, shown.stats.p50_ms) == (4, 2, 80.0)
    html = catalog.content.decode()
    assert '<td class="tool-calls">4</td>' in html and "2 (50 %)" in html
    day = client.get("/catalog/?period=1d").context["tools"]
    assert [(row.stats.calls, row.stats.p95_ms) for row in day if row.pk == tool.pk] == [(2, 290.0)]
    page = client.get(f"/tools/{tool.pk}/?period=1d")
    assert page.context["stats"].calls == 2 and page.context["stats"].last_failure_at is not None
    assert "200 / 290 ms" in page.content.decode()
