"""Per-tool figures over a period (issue 20): calls, failures and their rate, median and 95th
percentile latency, the last failure — from the gateway's call records (G9), in the tenant's
schema. Reads only. Every source counts (agent turns, the test console, probes); a business
error is an answer (the customer is told "no such case"), not a failure."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Aggregate, Count, FloatField, Max, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from tools.models import ToolCall

FAILURES = [value for value in ToolCall.Outcome.values if value not in (ToolCall.Outcome.OK, ToolCall.Outcome.BUSINESS_ERROR)]
# The dashboard's periods (the API takes any `since`/`until`).
PERIODS = {"1d": (timedelta(days=1), _("last 24 hours")), "7d": (timedelta(days=7), _("last 7 days")),
           "30d": (timedelta(days=30), _("last 30 days"))}
DEFAULT_PERIOD = "7d"


class Percentile(Aggregate):
    """PostgreSQL's continuous percentile (interpolated between the two nearest values)."""

    function = "percentile_cont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression, fraction: float, **extra):
        super().__init__(expression, fraction=float(fraction), **extra)


@dataclass(frozen=True)
class ToolStats:
    calls: int = 0
    failures: int = 0
    p50_ms: float | None = None
    p95_ms: float | None = None
    last_failure_at: datetime | None = None

    @property
    def failure_rate(self) -> float | None:
        return round(self.failures / self.calls, 4) if self.calls else None


def tool_stats(*, tool_ids, since: datetime, until: datetime) -> dict:
    """tool id → ToolStats of its calls started in [since, until); tools without calls are absent."""
    rows = (
        ToolCall.objects.filter(tool_id__in=list(tool_ids), started_at__gte=since, started_at__lt=until)
        .values("tool_id")
        .annotate(calls=Count("pk"), failures=Count("pk", filter=Q(outcome__in=FAILURES)),
                  p50=Percentile("duration_ms", 0.5), p95=Percentile("duration_ms", 0.95),
                  last_failure=Max("started_at", filter=Q(outcome__in=FAILURES)))
        .order_by()
    )
    return {row["tool_id"]: ToolStats(calls=row["calls"], failures=row["failures"], p50_ms=_ms(row["p50"]),
                                      p95_ms=_ms(row["p95"]), last_failure_at=row["last_failure"]) for row in rows}


def period_of(value: str | None, *, now=None) -> tuple[str, datetime, datetime]:
    """The dashboard's period choice (an unknown one is the default): its key, since, until."""
    key = value if value in PERIODS else DEFAULT_PERIOD
    until = now or timezone.now()
    return key, until - PERIODS[key][0], until


def _ms(value) -> float | None:
    return None if value is None else round(value, 1)
