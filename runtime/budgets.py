"""The two budgets of R4, as pure functions over plain values.

Per result: the gateway already cuts every result to the tenant's per-result budget and marks it
(`CallOutcome.truncated`, `result_chars` is the size before the cut); here that is only turned
into a log entry, never cut or marked a second time. Per turn: the results a turn injects into
the model share the tenant's per-turn budget; the result that crosses it is cut to what is left
(one mark, the gateway's mark goes with the cut tail), and once nothing is left every further
result is replaced by a short placeholder. Both texts say the content is incomplete and that the
model must answer with what it has and invent nothing.
"""

from dataclasses import dataclass

from django.utils import translation
from django.utils.translation import gettext as _

# With fewer characters of content than this left, a cut result would be a useless stub: use the placeholder.
MIN_USEFUL_CHARS = 80


@dataclass(frozen=True)
class Cut:
    """A truncation to log: which budget, and the sizes before and after."""

    kind: str  # "result" | "turn"
    original_chars: int
    kept_chars: int


@dataclass(frozen=True)
class Budgeted:
    text: str  # what the model reads
    used: int  # turn characters used after this result
    cuts: tuple[Cut, ...]


def truncation_mark(language: str) -> str:
    # The same sentence as the gateway's mark (tools/gateway/sanitize.py): one translation.
    with translation.override(language):
        return _("[…truncated: this result is incomplete. Answer only with what is here and invent nothing.]")


def exhausted_placeholder(language: str, tool_name: str) -> str:
    with translation.override(language):
        return _(
            "[The result of %(tool)s was left out: this turn has read as much as it may. The information is "
            "incomplete: answer with what you already have and invent nothing.]"
        ) % {"tool": tool_name}


def cut_to(text: str, budget: int, language: str) -> str:
    """`text` within `budget` characters, ending with the truncation mark."""
    mark = truncation_mark(language)
    keep = max(budget - len(mark) - 1, 0)
    head = text[:keep]
    # Cut at a word boundary when one is near, so the model does not read half a word.
    space = head.rfind(" ", max(keep - 40, 0))
    if space > 0:
        head = head[:space]
    return f"{head}\n{mark}"


def apply_budgets(
    *, text: str, tool_name: str, gateway_truncated: bool, result_chars: int, used: int, turn_budget: int, language: str
) -> Budgeted:
    """What the model reads of one tool result, given the `used` characters of the turn so far."""
    cuts = (Cut("result", max(result_chars, len(text)), len(text)),) if gateway_truncated else ()
    left = turn_budget - used
    if len(text) <= left:
        return Budgeted(text, used + len(text), cuts)
    if left >= len(truncation_mark(language)) + MIN_USEFUL_CHARS:
        kept = cut_to(text, left, language)
        return Budgeted(kept, used + len(kept), (*cuts, Cut("turn", len(text), len(kept))))
    # Nothing useful fits any more. The placeholder itself is not counted: it must always get through.
    return Budgeted(exhausted_placeholder(language, tool_name), max(used, turn_budget), (*cuts, Cut("turn", len(text), 0)))
