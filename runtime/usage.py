"""Model usage and its cost (issue 20): turns, model requests and their tokens over a period,
totalled and per day or per channel, in the tenant's schema. Reads only.

A turn counts in the period it was posted in; its model requests are its model, routing and
reply steps (a replayed step is stored once, so a turn run again counts each request once).
A request the model server failed once sent (error, timeout) is a model request too, counted in
`failed_requests`, with no tokens. Tokens are what the model server reported
(`TurnStep.tokens_in`/`tokens_out`); an answer without `usage` adds nothing and is counted in
`requests_without_usage`, and a total with no reported tokens at all is None, never 0. The cost
uses the tenant's prices per million tokens when set.
"""

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate

from runtime.models import Turn, TurnStep

GROUPS = ("day", "channel")
MODEL_KINDS = (TurnStep.Kind.MODEL, TurnStep.Kind.REPLY)
MILLION = Decimal(1_000_000)
COST_PLACES = Decimal("0.000001")


@dataclass(frozen=True)
class Prices:
    """Per million tokens; None: not set."""

    tokens_in: Decimal | None = None
    tokens_out: Decimal | None = None

    @classmethod
    def of(cls, tenant) -> "Prices":
        return cls(tenant.price_in_per_million, tenant.price_out_per_million)

    @property
    def is_set(self) -> bool:
        return self.tokens_in is not None or self.tokens_out is not None

    def cost(self, tokens_in: int | None, tokens_out: int | None) -> Decimal | None:
        """None without a price, or when no token of a priced kind was reported."""
        parts = [Decimal(tokens) * price / MILLION for tokens, price in ((tokens_in, self.tokens_in), (tokens_out, self.tokens_out))
                 if tokens is not None and price is not None]
        return sum(parts, Decimal(0)).quantize(COST_PLACES) if parts else None


@dataclass
class Figures:
    turns: int = 0
    model_requests: int = 0
    failed_requests: int = 0
    requests_without_usage: int = 0
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost: Decimal | None = None

    def add(self, other: "Figures"):
        self.turns += other.turns
        self.model_requests += other.model_requests
        self.failed_requests += other.failed_requests
        self.requests_without_usage += other.requests_without_usage
        self.tokens_in = _plus(self.tokens_in, other.tokens_in)
        self.tokens_out = _plus(self.tokens_out, other.tokens_out)


@dataclass
class Usage:
    since: datetime
    until: datetime
    group: str
    prices: Prices
    totals: Figures
    rows: list  # [(key, Figures)]: key a date (group=day) or (channel_kind, channel_name)


def _plus(a, b):
    return b if a is None else a if b is None else a + b


def _keys(group: str, prefix: str = "") -> tuple[dict, tuple]:
    """The annotations and value names that group turns (prefix "") or steps ("turn__")."""
    if group == "day":
        return {"key_day": TruncDate(f"{prefix}created_at")}, ("key_day",)
    return {}, (f"{prefix}conversation__channel_kind", f"{prefix}conversation__channel_name")


def usage_figures(*, since: datetime, until: datetime, group: str = "day", prices: Prices = Prices()) -> Usage:
    """Turns posted in [since, until) and their model requests, totalled and per `group` (day, UTC,
    or channel: kind and name), oldest day or busiest channel first."""
    rows: dict = {}
    turns = Turn.objects.filter(created_at__gte=since, created_at__lt=until)
    annotations, names = _keys(group)
    for row in turns.annotate(**annotations).values(*names).annotate(n=Count("pk")).order_by():
        key = _key(row, names)
        rows.setdefault(key, Figures()).turns = row["n"]
    steps = TurnStep.objects.filter(turn__created_at__gte=since, turn__created_at__lt=until, kind__in=MODEL_KINDS)
    annotations, names = _keys(group, "turn__")
    grouped = steps.annotate(**annotations).values(*names).annotate(
        n=Count("pk"), failed=Count("pk", filter=Q(state=TurnStep.State.FAILED)),
        unknown=Count("pk", filter=Q(tokens_in__isnull=True, tokens_out__isnull=True) & ~Q(state=TurnStep.State.FAILED)),
        tokens_in=Sum("tokens_in"), tokens_out=Sum("tokens_out"),
    ).order_by()
    for row in grouped:
        figures = rows.setdefault(_key(row, names), Figures())
        figures.model_requests, figures.failed_requests, figures.requests_without_usage = row["n"], row["failed"], row["unknown"]
        figures.tokens_in, figures.tokens_out = row["tokens_in"], row["tokens_out"]
    totals = Figures()
    for figures in rows.values():
        figures.cost = prices.cost(figures.tokens_in, figures.tokens_out)
        totals.add(figures)
    totals.cost = prices.cost(totals.tokens_in, totals.tokens_out)
    if group == "day":
        ordered = sorted(rows.items())
    else:
        ordered = sorted(rows.items(), key=lambda item: (-item[1].turns, item[0]))
    return Usage(since=since, until=until, group=group, prices=prices, totals=totals, rows=ordered)


def _key(row: dict, names: tuple):
    return row["key_day"] if names == ("key_day",) else tuple(row[name] for name in names)
