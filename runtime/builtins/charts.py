"""Charts (R12): `asixto__draw_chart` turns numbers that already exist in the turn into a chart
spec (Vega-Lite v5 JSON) that a channel can render; the turn stores it as a `chart` event.

The data comes from the server, not the model: every value the model passes must appear in the
turn's evidence — the customer's message or a tool result read in this turn — or the chart is
refused and the model is told which number it made up. Totals and shares are computed here."""

import re

from django.utils.translation import gettext as _

from runtime.builtins.registry import BuiltinTool, Refusal, Result, definition, reasons, register

VEGA_LITE = "https://vega.github.io/schema/vega-lite/v5.json"
MAX_POINTS = 50
_NUMBER = re.compile(r"-?\d[\d.,]*")
MARKS = {"bar": "bar", "line": "line", "pie": "arc"}


def _readings(token: str) -> set[float]:
    """Every way a written number may be read: 189.900 (Spanish thousands), 1,234.5, 12,5."""
    token = token.rstrip(".,")
    found = set()
    for thousands, decimal in ((",", "."), (".", ",")):
        try:
            found.add(float(token.replace(thousands, "").replace(decimal, ".")))
        except ValueError:
            pass
    return found


def numbers_in(texts) -> set[float]:
    found = set()
    for text in texts:
        for token in _NUMBER.findall(text or ""):
            found |= _readings(token)
    return found


def chart_spec(*, title: str, kind: str, points: list[dict]) -> dict:
    """Pure: the Vega-Lite spec, with each point's share of the total computed here."""
    total = sum(point["value"] for point in points)
    values = [{"label": point["label"], "value": point["value"],
               "share": round(100 * point["value"] / total, 1) if total else 0.0} for point in points]
    if kind == "pie":
        encoding = {"theta": {"field": "value", "type": "quantitative"}, "color": {"field": "label", "type": "nominal"}}
    else:
        encoding = {"x": {"field": "label", "type": "nominal", "sort": None},
                    "y": {"field": "value", "type": "quantitative"}}
    return {"$schema": VEGA_LITE, "title": title, "data": {"values": values}, "mark": MARKS[kind],
            "encoding": encoding, "usermeta": {"total": total, "source": "asixto__draw_chart"}}


def _draw(arguments, context) -> Result:
    known = numbers_in(context.evidence)
    invented = [point["value"] for point in arguments["points"]
                if not any(abs(point["value"] - number) < 1e-9 for number in known)]
    if invented:
        raise Refusal(_(
            "These numbers do not appear in the customer's messages or in any tool result of this turn: %(numbers)s. "
            "A chart shows only numbers that were given; get them from a tool first, or answer without a chart."
        ) % {"numbers": ", ".join(f"{value:g}" for value in invented[:10])})
    spec = chart_spec(title=arguments["title"], kind=arguments.get("kind", "bar"), points=arguments["points"])
    total = spec["usermeta"]["total"]
    text = _("The chart “%(title)s” is drawn with %(count)d values (total %(total)s); the customer sees it.") % {
        "title": arguments["title"], "count": len(arguments["points"]), "total": f"{total:g}"}
    return Result({"title": arguments["title"], "points": len(arguments["points"]), "total": total}, text=text,
                  chart=spec)


register(BuiltinTool(
    definition(
        name="draw_chart", title="Draw a chart",
        description="Draws a chart for the customer from numbers already given in this conversation or returned "
                    "by a tool in this turn. Never pass a number that you did not read there.",
        properties={
            "title": {"type": "string", "minLength": 1, "maxLength": 120},
            "kind": {"type": "string", "enum": sorted(MARKS)},
            "points": {"type": "array", "minItems": 1, "maxItems": MAX_POINTS, "items": {
                "type": "object", "additionalProperties": False, "required": ["label", "value"],
                "properties": {"label": {"type": "string", "minLength": 1, "maxLength": 80},
                               "value": {"type": "number"}}}},
        },
        required=["title", "points"],
        output={"properties": {"title": {"type": "string"}, "points": {"type": "integer"}, "total": {"type": "number"}},
                "required": ["title", "points", "total"]},
        verb="draw a chart", capabilities=["builtin"], read_only=True),
    run=_draw,
    reasons=reasons(r"\bgrafic[oa]s?\b", r"\bgraf(ica|ique|icar)\b", r"\bchart\b", r"\bgraph\b", r"\bplot\b",
                    r"\bdiagrama\b"),
))
