"""What the model is asked, as pure functions over plain values (R2, R3, R7).

- `loop_messages`: the start of the tool loop — the tenant's instructions, the recent
  conversation, the customer's question; the loop appends the model's calls and their results.
- `reply_messages`: the clean request the reply is written from once tools ran (R3) — the
  instructions, a brief summary of the conversation, the facts found in this turn and the
  question, never the raw loop (its calls, repeated attempts and debris).

Model-facing sentences are translatable and rendered in the conversation's language; the reply
language is also named explicitly, whatever language the instructions are in (R7).
"""

from dataclasses import dataclass

from django.utils import translation
from django.utils.translation import gettext as _

HISTORY_BUDGET = 4000  # characters of earlier messages the model sees
MESSAGE_CLIP = 1200  # one long earlier message does not take the whole budget


@dataclass(frozen=True)
class Line:
    """An earlier message: who said it ("customer" | "agent") and what."""

    role: str
    text: str


@dataclass(frozen=True)
class Fact:
    """What a tool told the model in this turn: its verb or name, and the text it read."""

    source: str
    text: str


# Languages that write the names of languages in lower case within a sentence ("en español").
LOWER_CASE_LANGUAGE_NAMES = {"es", "pt", "fr", "it", "ca"}


def language_name(code: str) -> str:
    """The name of the language `code` in the active language (A3): "Spanish", or "español"."""
    try:
        info = translation.get_language_info(code)
    except KeyError:
        try:
            info = translation.get_language_info(code.split("-")[0])
        except KeyError:
            return code
    name = str(info["name_translated"])
    if (translation.get_language() or "")[:2] in LOWER_CASE_LANGUAGE_NAMES:
        name = name[:1].lower() + name[1:]
    return name


def recent_history(lines: list[Line], budget: int = HISTORY_BUDGET, older: int = 0) -> tuple[list[Line], int]:
    """The newest earlier messages that fit in `budget` characters (each clipped), oldest first,
    and how many older ones were left out (`older`: ones the caller did not even load)."""
    kept, size = [], 0
    for line in reversed(lines):
        text = line.text if len(line.text) <= MESSAGE_CLIP else line.text[: MESSAGE_CLIP - 1] + "…"
        if size + len(text) > budget:
            break
        kept.append(Line(line.role, text))
        size += len(text)
    kept.reverse()
    return kept, older + len(lines) - len(kept)


def _system(instructions: str, language: str, guidance: str) -> str:
    reply_in = _("Always answer the customer in %(language)s.") % {"language": language_name(language)}
    return "\n\n".join(part for part in (instructions.strip(), guidance, reply_in) if part)


def loop_messages(*, instructions: str, language: str, history: list[Line], question: str, older: int = 0) -> list[dict]:
    """The tool loop's first request (R2): tools are offered natively next to these messages."""
    with translation.override(language):
        guidance = _(
            "You answer customers of this company. When the answer depends on the company's data, call the "
            "tool that provides it; never guess data that a tool can give."
        )
        system = _system(instructions, language, guidance)
        kept, omitted = recent_history(history, older=older)
        messages = [{"role": "system", "content": system}]
        if omitted:
            note = _("(%(count)d earlier messages of this conversation are not shown.)") % {"count": omitted}
            messages.append({"role": "system", "content": note})
    messages += [{"role": "user" if line.role == "customer" else "assistant", "content": line.text} for line in kept]
    messages.append({"role": "user", "content": question})
    return messages


def summary_text(history: list[Line], language: str, older: int = 0) -> str:
    """A brief summary of the conversation so far: its recent messages, the older ones counted."""
    kept, omitted = recent_history(history, older=older)
    with translation.override(language):
        if not kept:
            return _("This is the first message of the conversation.")
        customer, agent = _("Customer"), _("Agent")
        lines = [f"{customer if line.role == 'customer' else agent}: {line.text}" for line in kept]
        if omitted:
            lines.insert(0, _("(%(count)d earlier messages not shown.)") % {"count": omitted})
    return "\n".join(lines)


def reply_messages(
    *, instructions: str, language: str, history: list[Line], facts: list[Fact], question: str,
    incomplete: bool = False, older: int = 0,
) -> list[dict]:
    """The clean request the reply is written from (R3). No tools are offered with it."""
    with translation.override(language):
        guidance = _(
            "Write the reply to the customer's question using only the facts below and the conversation. If "
            "they do not answer the question, say so plainly and invent nothing. Do not mention tools, "
            "systems or internal names, and never write tool calls, JSON or code."
        )
        parts = [
            f"## {_('Conversation so far')}\n{summary_text(history, language, older)}",
            f"## {_('Facts found now')}\n" + (
                "\n".join(f"- [{fact.source}] {fact.text}" for fact in facts) if facts else _("(none)")
            ),
        ]
        if incomplete:
            parts.append(_(
                "Note: the search for information could not be finished. Tell the customer honestly what "
                "you could not find out."
            ))
        parts.append(f"## {_('Customer question')}\n{question}")
        system = _system(instructions, language, guidance)
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]
