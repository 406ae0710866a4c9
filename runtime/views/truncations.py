"""Truncation logs for support staff and admins (R4, A2): filters (tool, kind, dates), a chart of
truncations per tool over time (inline SVG, drawn here), the ranking of tools by how often and
how much they overflow, and the logs themselves."""

from django.core.paginator import Paginator
from django.shortcuts import render
from django.utils import formats
from django.utils.translation import gettext as _

from runtime import reports
from runtime.charts import stacked_bars
from runtime.forms import TruncationFilterForm
from tenants.access import tenant_page

PAGE_SIZE = 50


def _label(moment, unit):
    if unit == "hour":
        return formats.date_format(moment, "H:i") if moment.hour else formats.date_format(moment, "SHORT_DATE_FORMAT")
    return formats.date_format(moment, "SHORT_DATE_FORMAT")


@tenant_page
def truncations_page(request):
    form = TruncationFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    window = reports.default_window(since=filters.get("since"), until=filters.get("until"))
    tool, kind = filters.get("tool", ""), filters.get("kind", "")
    others = _("other tools")
    buckets, series = reports.truncation_series(window, tool_name=tool, kind=kind, others_name=others)
    chart = stacked_bars(labels=[_label(bucket, window.unit) for bucket in buckets], series=series, others_name=others)
    logs = reports.truncations_in(window, tool_name=tool, kind=kind).order_by("-created_at", "-id")
    page = Paginator(logs, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    if not form.errors:  # the fields show the dates the page covers, as the page's language writes them
        form = TruncationFilterForm(initial={**filters, "since": window.since, "until": window.until})
    return render(request, "runtime/truncations.html", {
        "nav": "truncations", "form": form, "window": window, "chart": chart, "page": page, "query": query.urlencode(),
        "ranking": reports.overflow_ranking(window, kind=kind), "tool_names": reports.truncated_tool_names(),
    })
