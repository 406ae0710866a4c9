"""Follow-ups and reminders (R12): `asixto__schedule_follow_up` (the company calls or writes
back) and `asixto__create_reminder` (the customer is reminded of something). Both write a row
keyed by the step's idempotency key, so a re-sent step writes once (R10); runtime/builtins/delivery.py
sends them when they fall due."""

import zoneinfo
from datetime import timedelta

from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from runtime.builtins.models import FollowUp, Reminder
from runtime.builtins.registry import BuiltinTool, Refusal, Result, definition, reasons, register

MAX_AHEAD = timedelta(days=366)
WHEN = {"type": "string", "maxLength": 40,
        "description": "ISO 8601 date and time, e.g. 2026-12-02T10:00; without an offset it is read in the "
                       "customer's timezone."}
SAVED = {"properties": {"id": {"type": "string"}, "at": {"type": "string"}}, "required": ["id", "at"]}


def zone_of(tz_name: str) -> zoneinfo.ZoneInfo:
    """The conversation's timezone; UTC when it names none the system knows."""
    try:
        return zoneinfo.ZoneInfo(tz_name or "UTC")
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo("UTC")


def _moment(text: str, tz_name: str):
    moment = parse_datetime(text.strip())
    if moment is None:
        raise Refusal(_("“%(value)s” is not a date and time like 2026-12-02T10:00. Ask the customer when.") % {"value": text})
    if timezone.is_naive(moment):
        moment = moment.replace(tzinfo=zone_of(tz_name))
    now = timezone.now()
    if not now < moment < now + MAX_AHEAD:
        raise Refusal(_("The date must be in the future and within a year. Ask the customer for another one."))
    return moment


def _follow_up(arguments, context) -> Result:
    due = _moment(arguments["when"], context.timezone)
    row, _created = FollowUp.objects.get_or_create(idempotency_key=context.idempotency_key, defaults={
        "turn_id": context.turn_id, "conversation_id": context.conversation_id or None, "due_at": due,
        "reason": arguments["reason"]})
    return Result({"id": str(row.pk), "at": row.due_at.isoformat()})


def _reminder(arguments, context) -> Result:
    at = _moment(arguments["when"], context.timezone)
    row, _created = Reminder.objects.get_or_create(idempotency_key=context.idempotency_key, defaults={
        "turn_id": context.turn_id, "conversation_id": context.conversation_id or None, "due_at": at,
        "text": arguments["text"]})
    return Result({"id": str(row.pk), "at": row.due_at.isoformat()})


register(BuiltinTool(
    definition(
        name="schedule_follow_up", title="Schedule a follow-up",
        description="Schedules the company to contact the customer again at a given time (a call back, a "
                    "message later). Use it only when the customer asks to be contacted later.",
        properties={"when": WHEN, "reason": {"type": "string", "minLength": 1, "maxLength": 500,
                                             "description": "what the follow-up is about"}},
        required=["when", "reason"], output=SAVED, verb="schedule a follow-up", capabilities=["builtin"],
        idempotent=False),
    run=_follow_up,
    reasons=reasons(r"\bllam(a|e)me\b", r"\bllamar(me|nos)\b", r"\bcontact(a|e)me\b", r"\bescrib(e|a)me\b",
                    r"\b(call|contact|text) me\b", r"\bcall (me )?back\b", r"\bfollow[- ]?up\b", r"\bseguimiento\b",
                    r"\bvuelv(a|e)n? a (llamar|escribir)\b"),
))

register(BuiltinTool(
    definition(
        name="create_reminder", title="Create a reminder",
        description="Creates a reminder that the customer receives at a given time. Use it only when the "
                    "customer asks to be reminded of something.",
        properties={"when": WHEN, "text": {"type": "string", "minLength": 1, "maxLength": 500,
                                           "description": "what to remind the customer of"}},
        required=["when", "text"], output=SAVED, verb="create a reminder", capabilities=["builtin"],
        idempotent=False),
    run=_reminder,
    reasons=reasons(r"\brecuerda(me|nos)\b", r"\brecordatorio\b", r"\bremind(er)?\b", r"\bno me dejes olvidar\b",
                    r"\bavisa(me|nos)\b"),
))
