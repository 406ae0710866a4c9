"""What a tenant teaches pre-routing (R6, issue 18): the admin's sample requests of a tool (part of its
overlay: API and contract page) and support's corrections of a turn's routing (conversation page).
The one place where examples change; the runtime reads them with `routing_examples` on every routed
turn, through the catalog cache, so a change counts from the next message on, without a restart.
Everything here runs in the current tenant's schema: one tenant's examples never reach another's
routing."""

from django.db import transaction
from django.utils.translation import gettext_lazy as _

from asixto.errors import ApplicationError
from tools.catalog_cache import cached
from tools.models import RoutingExample, Tool

MAX_TEXT = 500
MAX_PER_TOOL = 30  # sample requests of one tool
MAX_READ = 3000  # examples routing reads per tenant (newest first)


def _clean(texts) -> list[str]:
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise ApplicationError(_("The examples were not saved."), fields={"examples": [_("A list of texts.")]})
    cleaned, seen = [], set()
    for text in texts:
        text = " ".join(text.split())
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            cleaned.append(text)
    problems = []
    if len(cleaned) > MAX_PER_TOOL:
        problems.append(_("At most %(limit)s examples per tool.") % {"limit": MAX_PER_TOOL})
    if any(len(text) > MAX_TEXT for text in cleaned):
        problems.append(_("Each example has at most %(limit)s characters.") % {"limit": MAX_TEXT})
    if problems:
        raise ApplicationError(_("The examples were not saved."), fields={"examples": problems})
    return cleaned


def tool_set_examples(*, tool: Tool, texts: list[str], who: str) -> list[RoutingExample]:
    """The admin's sample requests of `tool`, replacing the previous ones (corrections stay)."""
    cleaned = _clean(texts)
    with transaction.atomic():
        kept = {e.text: e for e in RoutingExample.objects.select_for_update().filter(
            tool_name=tool.prefixed_name, source=RoutingExample.Source.ADMIN)}
        RoutingExample.objects.filter(pk__in=[e.pk for t, e in kept.items() if t not in cleaned]).delete()
        for text in cleaned:
            if text not in kept:
                RoutingExample.objects.create(tool_name=tool.prefixed_name, text=text,
                                              source=RoutingExample.Source.ADMIN, created_by=who)
    return list(tool_examples(tool))


def routing_correct(*, turn_id, text: str, tool_name: str | None, who: str) -> RoutingExample:
    """Support's correction of a turn's routing: its message should have gone to `tool_name` (a live
    tool of the tenant), or to no tool (None). One correction per turn: a new one replaces it."""
    text = " ".join((text or "").split())[:MAX_TEXT]
    if not text:
        raise ApplicationError(_("This turn has no message text to learn from."))
    if tool_name and not Tool.objects.filter(prefixed_name=tool_name, removed_in__isnull=True).exists():
        raise ApplicationError(_("That tool is not in the catalog."), fields={"tool": [_("Choose a tool of the catalog.")]})
    with transaction.atomic():
        RoutingExample.objects.filter(turn_id=turn_id, source=RoutingExample.Source.CORRECTION).delete()
        return RoutingExample.objects.create(tool_name=tool_name or "", text=text, source=RoutingExample.Source.CORRECTION,
                                             created_by=who, turn_id=turn_id)


def tool_examples(tool: Tool):
    return RoutingExample.objects.filter(tool_name=tool.prefixed_name).order_by("source", "created_at")


def turn_corrections(turn_ids) -> dict:
    """turn id → its correction."""
    return {e.turn_id: e for e in RoutingExample.objects.filter(turn_id__in=list(turn_ids),
                                                                source=RoutingExample.Source.CORRECTION)}


def routing_examples() -> tuple[tuple[str | None, str], ...]:
    """Every example of the current tenant as routing reads it: (tool name or None, text). Kept
    by the process with the catalog (tools/catalog_cache.py): a saved or deleted example renews
    the tenant's catalog generation (tools/signals.py), so a change made here applies to the next
    message at once, one made in another process within the cache's REVALIDATE_SECONDS; no turn
    reads the table while nothing changes (P4)."""
    def load():
        rows = RoutingExample.objects.order_by("-created_at").values_list("tool_name", "text")[:MAX_READ]
        return tuple((name or None, text) for name, text in rows)

    return cached(("routing-examples",), load)
