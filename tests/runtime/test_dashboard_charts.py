"""Every chart the dashboard draws is well-formed SVG in every interface language (A2, A3):
numbers in SVG attributes are never localized (Spanish writes 726,9, which draws nothing), bars
lie inside the viewBox and the x-axis labels never overlap."""

import re
import xml.etree.ElementTree as ET
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from runtime.charts import label_width
from runtime.models import Conversation, Message, TruncationLog, Turn

SVG = "{http://www.w3.org/2000/svg}"
# The pages that draw a chart, with queries that give each time unit (hours, days, weeks).
CHART_PAGES = {"runtime/truncations.html": "/truncations/"}
WINDOWS = ["", "since={today}&until={today}", "since={week_ago}", "since={quarter_ago}", "since={long_ago}"]
NUMERIC = {"x", "y", "x1", "x2", "y1", "y2", "width", "height"}


def _truncations_every_few_days(world):
    with world.schema():
        conversation = Conversation.objects.create(language="es")
        message = Message.objects.create(conversation=conversation, role="customer", text="x")
        turn = Turn.objects.create(conversation=conversation, message=message)
        now = timezone.now()
        for days in range(0, 200, 3):
            for n, tool in enumerate(("crm__buscar_producto", "erp__listar_pedidos")[: 1 + days % 2]):
                log = TruncationLog.objects.create(turn=turn, conversation=conversation, tool_name=tool, kind="result",
                                                   original_chars=5000, kept_chars=3000)
                TruncationLog.objects.filter(pk=log.pk).update(created_at=now - timedelta(days=days, minutes=n))


def _svgs(html):
    found = re.findall(r"<svg\b.*?</svg>", html, flags=re.S)
    # The page is HTML: give the inline SVG its namespace so it parses as the browser reads it.
    return [ET.fromstring(svg.replace("<svg ", f'<svg xmlns="{SVG[1:-1]}" ', 1)) for svg in found]


def check_chart(svg, where):
    view = [float(number) for number in svg.get("viewBox").split()]
    assert len(view) == 4, where
    _x0, _y0, width, height = view
    for element in svg.iter():
        for name, value in element.attrib.items():
            if name in NUMERIC:
                float(value)  # raises on "726,9"
    bars = list(svg.iter(f"{SVG}rect"))
    assert bars, where
    for bar in bars:
        x, y, w, h = (float(bar.get(name)) for name in ("x", "y", "width", "height"))
        assert 0 <= x and x + w <= width and 0 <= y and y + h <= height and w > 0 and h > 0, (where, bar.attrib)
    labels = [text for text in svg.iter(f"{SVG}text") if text.get("class") == "x-label"]
    assert len(labels) >= 2, where
    spans = []
    for text in labels:
        middle, half = float(text.get("x")), label_width(text.text) / 2
        assert middle - half >= 0 and middle + half <= width, (where, text.text)
        spans.append((middle - half, middle + half))
    for (_left, right), (left, _right) in zip(spans, spans[1:]):
        assert right <= left, (where, "x labels overlap", [text.text for text in labels])


@pytest.mark.parametrize("language", [code for code, _name in settings.LANGUAGES])
def test_every_chart_is_valid_svg_in_every_language(alpha, language):
    """A2, A3: each chart page, for an hourly window, daily ones (7, 30 and 92 days) and a weekly one, in each
    interface language: numeric attributes parse as numbers, bars inside the viewBox, x labels
    apart."""
    _truncations_every_few_days(alpha)
    today = timezone.localdate()
    dates = {"today": today, "week_ago": today - timedelta(days=6), "quarter_ago": today - timedelta(days=91),
             "long_ago": today - timedelta(days=199)}
    client = alpha.dashboard("sam")
    for path in CHART_PAGES.values():
        for window in WINDOWS:
            where = f"{path}?{window.format(**dates)} ({language})"
            response = client.get(f"{path}?{window.format(**dates)}", HTTP_ACCEPT_LANGUAGE=language)
            assert response.status_code == 200, where
            charts = _svgs(response.content.decode())
            assert charts, where
            for svg in charts:
                check_chart(svg, where)


def test_the_list_of_chart_pages_is_complete():
    """Every template that draws an <svg> chart is checked above (the layout's icon excepted)."""
    drawing = {str(path.relative_to(Path(settings.BASE_DIR) / "templates"))
               for path in (Path(settings.BASE_DIR) / "templates").rglob("*.html") if "<svg" in path.read_text()}
    assert drawing == set(CHART_PAGES)
