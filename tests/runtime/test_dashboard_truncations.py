"""Truncation logs in the dashboard (R4, A2, T1, T4): filters by tool, kind and dates, a chart of
truncations per tool over time drawn as inline SVG on the server, and the ranking of tools by how
often and how much they overflow — for support staff, from this tenant only."""

import re
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from runtime.charts import nice_ceiling, stacked_bars
from runtime.models import Conversation, Message, TruncationLog, Turn
from tools.models import ToolCall


def make_logs(world, tool, count, *, kind="result", original=5000, kept=3000, days_ago=0, calls=0):
    """`count` truncation logs of `tool`, and `calls` gateway call records of it from turns."""
    with world.schema():
        conversation = Conversation.objects.create(language="es")
        message = Message.objects.create(conversation=conversation, role="customer", text="x")
        turn = Turn.objects.create(conversation=conversation, message=message)
        when = timezone.now() - timedelta(days=days_ago)
        logs = TruncationLog.objects.bulk_create([
            TruncationLog(turn=turn, conversation=conversation, tool_name=tool, kind=kind, original_chars=original,
                          kept_chars=kept) for _ in range(count)])
        TruncationLog.objects.filter(pk__in=[log.pk for log in logs]).update(created_at=when)
        ToolCall.objects.bulk_create([
            ToolCall(tool_name=tool, turn_id=turn.pk, channel="chat", idempotency_key=f"k{n}", started_at=when, outcome="ok")
            for n in range(calls)])
        return turn


def page(world, query="", user="sam"):
    response = world.dashboard(user).get(f"/truncations/?{query}")
    assert response.status_code == 200
    return response


def test_support_staff_see_the_chart_the_ranking_and_the_logs(alpha):
    """R4, A2, T4: the busiest tool ranks first (how often), ties broken by characters cut (how
    much); the chart draws one bar segment per tool and day, with a legend; the share of calls
    that overflowed the per-result budget is shown."""
    make_logs(alpha, "crm__buscar_producto", 5, original=9000, kept=3000, calls=10)
    make_logs(alpha, "crm__buscar_producto", 2, days_ago=3)
    make_logs(alpha, "erp__listar_pedidos", 3, original=4000, kept=3000, kind="turn")
    make_logs(alpha, "erp__consultar_stock", 3, original=20000, kept=3000)
    response = page(alpha)
    ranking = response.context["ranking"]
    assert [row.tool_name for row in ranking] == ["crm__buscar_producto", "erp__consultar_stock", "erp__listar_pedidos"]
    top = ranking[0]
    assert (top.truncations, top.turns, top.calls, top.chars_cut, top.largest_original) == (7, 2, 10, 5 * 6000 + 2 * 2000, 9000)
    assert top.share_cut == 0.7 and ranking[2].share_cut is None
    chart = response.context["chart"]
    assert chart.total == 13 and [name for _colour, name in chart.legend] == [row.tool_name for row in ranking]
    assert len(chart.rects) == 4  # buscar_producto on two days, the other two tools on one
    html = response.content.decode()
    assert "<svg" in html and html.count("<rect") == 4 and "crm__buscar_producto: 5" in html
    assert "70 %" in html
    # Drawn here, nothing fetched: no script, stylesheet or image from another host (a random
    # CSRF token may well contain "cdn", so the page's text is not searched for it).
    assert not re.search(r'(?:src|href)="(?:https?:)?//', html)


def test_it_filters_by_tool_kind_and_dates(alpha):
    """R4, A2: each filter narrows the chart, the logs and (for kind and dates) the ranking."""
    make_logs(alpha, "crm__buscar_producto", 2)
    make_logs(alpha, "erp__listar_pedidos", 3, kind="turn")
    make_logs(alpha, "crm__buscar_producto", 4, days_ago=45)
    assert page(alpha).context["page"].paginator.count == 5  # the last 30 days by default
    by_tool = page(alpha, "tool=crm__buscar_producto")
    assert by_tool.context["page"].paginator.count == 2 and by_tool.context["chart"].total == 2
    by_kind = page(alpha, "kind=turn")
    assert by_kind.context["page"].paginator.count == 3
    assert [row.tool_name for row in by_kind.context["ranking"]] == ["erp__listar_pedidos"]
    today = timezone.localdate()
    old = page(alpha, f"since={today - timedelta(days=60)}&until={today - timedelta(days=40)}")
    assert old.context["page"].paginator.count == 4 and old.context["chart"].total == 4
    assert [row.tool_name for row in old.context["ranking"]] == ["crm__buscar_producto"]
    wide = page(alpha, f"since={today - timedelta(days=200)}")
    assert wide.context["window"].unit == "week" and wide.context["chart"].total == 9
    one_day = page(alpha, f"since={today}&until={today}")
    assert one_day.context["window"].unit == "hour" and one_day.context["chart"].total == 5


def test_bad_filters_are_shown_not_a_500(alpha):
    """A4: a bad date, an unknown kind, an inverted range: shown on the page, never a 500."""
    make_logs(alpha, "crm__buscar_producto", 1)
    for query in ("since=ayer", "kind=enorme", "since=2026-05-02&until=2026-05-01", "page=-3", "tool=" + "x" * 300):
        response = alpha.dashboard("sam").get(f"/truncations/?{query}")
        assert response.status_code == 200, query


def test_a_tool_name_cannot_inject_markup_into_the_chart(alpha):
    """Tool names come from tenants' servers: escaped in the SVG, the legend and the tables."""
    make_logs(alpha, 'x__<script>alert(1)</script>"', 1)
    html = page(alpha).content.decode()
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html


def test_only_this_tenants_truncations_are_shown(alpha, beta):
    """T1: B's logs are in neither A's chart, ranking, tool filter nor list."""
    make_logs(alpha, "crm__buscar_producto", 1)
    make_logs(beta, "beta__herramienta_secreta", 3)
    connection.set_schema_to_public()
    response = page(alpha, user="ana")
    assert "beta__herramienta_secreta" not in response.content.decode() and response.context["chart"].total == 1


def test_stacked_bars_geometry():
    """A2: bars stack in series order, heights are proportional to the counts against a round
    top, empty counts draw nothing, and x labels are thinned to at most a dozen."""
    chart = stacked_bars(labels=["a", "b", "c"], series={"t1": [3, 0, 1], "t2": [1, 0, 0]}, width=400, height=200)
    assert chart.total == 5 and [tick.label for tick in chart.y_ticks] == ["0", "1", "2", "3", "4", "5"]
    first, second, third = chart.rects
    assert (first.title, second.title, third.title) == ("a · t1: 3", "a · t2: 1", "c · t1: 1")
    plot = chart.bottom - chart.top
    assert abs(first.height - plot * 3 / 5) < 0.2 and abs(second.y + second.height - first.y) < 0.2
    assert first.y + first.height == chart.bottom and first.colour != second.colour
    many = stacked_bars(labels=[str(n) for n in range(90)], series={"t": [1] * 90})
    assert len(many.x_ticks) <= 12 and len(many.rects) == 90
    empty = stacked_bars(labels=["a"], series={})
    assert empty.total == 0 and empty.rects == []
    others = stacked_bars(labels=["a"], series={"t": [1], "others": [2]}, others_name="others")
    assert others.legend[1] == ("#9aa1ad", "others")
    assert [nice_ceiling(n) for n in (0, 1, 3, 7, 11, 20, 21, 480, 5001)] == [1, 1, 5, 10, 20, 20, 50, 500, 10000]
