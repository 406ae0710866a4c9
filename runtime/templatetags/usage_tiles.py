"""The overview's model-usage tile (issue 20): the overview page lives in tools, which never
imports runtime, so the tile is a template tag of the runtime's own."""

from datetime import timedelta

from django import template
from django.utils import timezone

from runtime.usage import Prices, usage_figures

register = template.Library()


@register.inclusion_tag("runtime/usage_tile.html", takes_context=True)
def usage_tile(context):
    """Turns, model requests, tokens and cost in the last 24 hours and the last 30 days."""
    now = timezone.now()
    prices = Prices.of(context["request"].tenant)
    periods = [usage_figures(since=now - timedelta(hours=24), until=now, prices=prices).totals,
               usage_figures(since=now - timedelta(days=30), until=now, prices=prices).totals]
    return {"day": periods[0], "month": periods[1], "prices": prices, "user": context.get("user")}
