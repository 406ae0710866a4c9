"""Reads behind the dashboard's runtime pages (A2): conversations with their filters, a
conversation's turns with everything that happened in them, and the truncation report —
counts per tool over time and the ranking of tools by how often and how much they overflow (R4).
Every query runs in the current tenant's schema (T1)."""

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.db.models import Count, Exists, F, Max, OuterRef, Prefetch, Q, Subquery, Sum
from django.db.models.functions import TruncDay, TruncHour, TruncWeek
from django.utils import timezone

from runtime.models import Conversation, Message, TruncationLog, Turn, TurnEvent, TurnStep, WebhookDelivery
from runtime.search import conversations_matching
from runtime.usage import MODEL_KINDS
from tools.models import ToolCall
from tools.routing_examples import turn_corrections

TOP_SERIES = 6


def day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


# ---------------------------------------------------------------- conversations

def conversation_list(*, channel_kind="", channel_name="", status="", since=None, until=None, q=""):
    """Conversations by last activity, newest first, with their number of turns, the last turn's
    status and the last customer message. `since`/`until` are dates (inclusive); `status`
    keeps conversations with at least one turn in that state; `q` searches (runtime.search)."""
    turns = Turn.objects.filter(conversation=OuterRef("pk")).order_by("-created_at")
    last_question = Message.objects.filter(conversation=OuterRef("pk"), role=Message.Role.CUSTOMER).order_by("-created_at")
    queryset = Conversation.objects.annotate(
        turn_count=Count("turns"),
        last_status=Subquery(turns.values("status")[:1]),
        last_question=Subquery(last_question.values("text")[:1]),
    )
    if channel_kind:
        queryset = queryset.filter(channel_kind=channel_kind)
    if channel_name:
        queryset = queryset.filter(channel_name=channel_name)
    if status:
        queryset = queryset.filter(Exists(Turn.objects.filter(conversation=OuterRef("pk"), status=status)))
    if since:
        queryset = queryset.filter(updated_at__gte=day_start(since))
    if until:
        queryset = queryset.filter(created_at__lt=day_start(until + timedelta(days=1)))
    if q:
        queryset = conversations_matching(queryset, q=q)
    return queryset.order_by("-updated_at", "-created_at")


def channel_names() -> list[str]:
    return list(Conversation.objects.exclude(channel_name="").order_by("channel_name")
                .values_list("channel_name", flat=True).distinct())


@dataclass
class TurnView:
    turn: Turn
    tool_calls: list
    deliveries: list
    routed_to: str | None = None  # the tool pre-routing showed alone (R6), None when the turn ran unrouted
    correction: object = None  # support's correction of its routing (tools.RoutingExample)
    model_requests: int = 0  # as usage counts them (the router's, the loop's, the reply's)


def conversation_turns(*, conversation: Conversation) -> list[TurnView]:
    """The conversation's turns, oldest first, each with its events, truncations, the gateway's
    call records (linked to their pages), the webhook attempts and its model requests: six queries in all."""
    turns = list(
        Turn.objects.filter(conversation=conversation).select_related("message", "reply").prefetch_related(
            Prefetch("events", queryset=TurnEvent.objects.order_by("id")),
            Prefetch("truncations", queryset=TruncationLog.objects.order_by("id")),
        ).order_by("created_at")
    )
    ids = [turn.pk for turn in turns]
    calls, deliveries = defaultdict(list), defaultdict(list)
    for call in ToolCall.objects.filter(turn_id__in=ids).order_by("started_at"):
        calls[call.turn_id].append(call)
    for attempt in WebhookDelivery.objects.filter(turn_id__in=ids, message__isnull=True).order_by("created_at", "id"):
        deliveries[attempt.turn_id].append(attempt)
    routed = {}
    for turn_id, response in TurnStep.objects.filter(turn_id__in=ids, index=1, kind=TurnStep.Kind.MODEL).values_list(
            "turn_id", "response"):
        route = (response or {}).get("route") if isinstance(response, dict) else None
        routed[turn_id] = route.get("tool") if isinstance(route, dict) else None
    corrections = turn_corrections(ids)
    requests = dict(TurnStep.objects.filter(turn_id__in=ids, kind__in=MODEL_KINDS).values("turn_id").annotate(n=Count("pk"))
                    .values_list("turn_id", "n").order_by())
    return [TurnView(turn, calls[turn.pk], deliveries[turn.pk], routed.get(turn.pk), corrections.get(turn.pk),
                     requests.get(turn.pk, 0)) for turn in turns]


def conversation_scheduled(*, conversation: Conversation) -> list:
    """The conversation's reminders and follow-ups by due time, each with `kind`, its notice (once
    delivered) and the notice's webhook attempts (`deliveries`)."""
    from runtime.builtins.models import FollowUp, Reminder

    items = []
    for kind, model in (("reminder", Reminder), ("follow_up", FollowUp)):
        for item in model.objects.filter(conversation=conversation).select_related("notice"):
            item.kind = kind
            items.append(item)
    attempts = defaultdict(list)
    notices = [item.notice_id for item in items if item.notice_id]
    for attempt in WebhookDelivery.objects.filter(message_id__in=notices).order_by("created_at", "id"):
        attempts[attempt.message_id].append(attempt)
    for item in items:
        item.deliveries = attempts[item.notice_id] if item.notice_id else []
    return sorted(items, key=lambda item: item.due_at)


# ---------------------------------------------------------------- truncations

@dataclass(frozen=True)
class Window:
    """A date range for the truncation report, and how finely to count in it."""

    since: date
    until: date  # inclusive

    @property
    def start(self) -> datetime:
        return day_start(self.since)

    @property
    def end(self) -> datetime:
        return day_start(self.until + timedelta(days=1))

    @property
    def unit(self) -> str:
        days = (self.until - self.since).days + 1
        return "hour" if days <= 2 else "day" if days <= 92 else "week"

    def buckets(self) -> list[datetime]:
        """Every bucket's start, in the current time zone, so empty buckets show as gaps."""
        if self.unit == "hour":
            step, first = timedelta(hours=1), self.start
        elif self.unit == "day":
            step, first = timedelta(days=1), self.start
        else:
            step, first = timedelta(weeks=1), day_start(self.since - timedelta(days=self.since.weekday()))
        out, current = [], first
        while current < self.end:
            out.append(current)
            current = timezone.localtime(current + step).replace(minute=0, second=0, microsecond=0)
        return out


def default_window(*, since=None, until=None, days=30) -> Window:
    until = until or timezone.localdate()
    since = since or until - timedelta(days=days - 1)
    if since > until:
        since, until = until, since
    return Window(since, until)


def truncations_in(window: Window, *, tool_name="", kind=""):
    queryset = TruncationLog.objects.filter(created_at__gte=window.start, created_at__lt=window.end)
    if tool_name:
        queryset = queryset.filter(tool_name=tool_name)
    if kind:
        queryset = queryset.filter(kind=kind)
    return queryset


def truncation_series(window: Window, *, tool_name="", kind="", others_name="others") -> tuple[list[datetime], dict[str, list[int]]]:
    """Counts per bucket for the most truncated tools (TOP_SERIES), the rest summed as `others_name`."""
    trunc = {"hour": TruncHour, "day": TruncDay, "week": TruncWeek}[window.unit]
    rows = (truncations_in(window, tool_name=tool_name, kind=kind).annotate(bucket=trunc("created_at"))
            .values("bucket", "tool_name").annotate(n=Count("id")))
    buckets = window.buckets()
    index = {bucket: i for i, bucket in enumerate(buckets)}
    per_tool: dict[str, list[int]] = defaultdict(lambda: [0] * len(buckets))
    for row in rows:
        i = index.get(timezone.localtime(row["bucket"]))
        if i is not None:
            per_tool[row["tool_name"]][i] += row["n"]
    ranked = sorted(per_tool, key=lambda name: (-sum(per_tool[name]), name))
    series = {name: per_tool[name] for name in ranked[:TOP_SERIES]}
    if len(ranked) > TOP_SERIES:
        series[others_name] = [sum(per_tool[name][i] for name in ranked[TOP_SERIES:]) for i in range(len(buckets))]
    return buckets, series


@dataclass(frozen=True)
class ToolOverflow:
    tool_name: str
    truncations: int
    turns: int
    calls: int  # the tool's calls from turns in the window
    chars_cut: int
    average_original: int
    largest_original: int
    last_seen: datetime
    result_cuts: int = 0  # by the per-result budget

    @property
    def share_cut(self) -> float | None:
        """Of the tool's calls, the share whose result went over the per-result budget."""
        return min(1.0, self.result_cuts / self.calls) if self.calls else None


def overflow_ranking(window: Window, *, kind="") -> list[ToolOverflow]:
    """Tools by how often (truncations) and how much (characters cut) they overflow (R4): a tool
    at the top is a configuration problem worth a look (too chatty a result, too small a budget)."""
    rows = (truncations_in(window, kind=kind).values("tool_name").annotate(
        n=Count("id"), turns=Count("turn", distinct=True), cut=Sum(F("original_chars") - F("kept_chars")),
        original=Sum("original_chars"), largest=Max("original_chars"), last=Max("created_at"),
        result_cuts=Count("id", filter=Q(kind=TruncationLog.Kind.RESULT)),
    ))
    calls = dict(ToolCall.objects.filter(source=ToolCall.Source.TURN, started_at__gte=window.start,
                                         started_at__lt=window.end)
                 .values_list("tool_name").annotate(n=Count("id")).values_list("tool_name", "n"))
    ranking = [
        ToolOverflow(tool_name=row["tool_name"], truncations=row["n"], turns=row["turns"],
                     calls=calls.get(row["tool_name"], 0), chars_cut=row["cut"] or 0,
                     average_original=round(row["original"] / row["n"]), largest_original=row["largest"],
                     last_seen=row["last"], result_cuts=row["result_cuts"])
        for row in rows
    ]
    return sorted(ranking, key=lambda item: (-item.truncations, -item.chars_cut, item.tool_name))


def truncated_tool_names() -> list[str]:
    return list(TruncationLog.objects.order_by("tool_name").values_list("tool_name", flat=True).distinct())
